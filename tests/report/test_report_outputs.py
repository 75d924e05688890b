"""What ``write_report`` leaves in OUT: lenient reading, bad input, summary, Parquet, charts,
determinism and the golden report."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pandas as pd
import pytest
from report_factory import meta, reason, record, write_sweep
from test_report_markdown import sweep_records

from sweeper.report.commands import write_report
from sweeper.settings.errors import UsageError

GOLDEN = Path(__file__).parent / "golden" / "report.md"


def test_torn_line_is_skipped_and_a_repeated_key_keeps_its_last_record(tmp_path: Path) -> None:
    out = write_sweep(tmp_path / "out", [record("org/a", 1, 10, "fail", fail_at="load",
                                                blockers=[reason("oom")]), record("org/b", 2, 5)])  # fmt: skip
    with open(out / "records.jsonl", "a", encoding="utf-8") as fh:
        fh.write(record("org/a", 1, 10).to_json() + "\n")  # a resumed sweep re-ran org/a
        fh.write('{"sweep_id": "s1", "model_id": "org/c", "sta')  # killed mid-write
    text = write_report(out, charts=False).read_text()
    assert "1 unreadable line(s) of records.jsonl were skipped" in text
    assert "| **models** | 2 |" in text
    assert "**Device pass rate: 100.0%** (2 of the 2 models" in text
    assert "org/c" not in text


@pytest.mark.parametrize(
    ("setup", "message"),
    [
        (lambda p: None, "does not exist"),
        (lambda p: p.mkdir(), "no records.jsonl in"),
        (lambda p: (p.mkdir(), (p / "records.jsonl").write_text("garbage\n[1, 2]\n")), "holds no readable records"),
    ],
)
def test_bad_folders_raise_one_line_usage_errors(tmp_path: Path, setup, message: str) -> None:
    out = tmp_path / "out"
    setup(out)
    with pytest.raises(UsageError, match=message) as err:
        write_report(out)
    assert "\n" not in str(err.value)


def test_empty_sweep_still_reports(tmp_path: Path) -> None:
    out = write_sweep(tmp_path / "out", [])
    text = write_report(out).read_text()
    assert "| **models** | 0 |" in text
    assert "**Device pass rate: —**" in text


def test_summary_parquet_and_charts(tmp_path: Path) -> None:
    out = write_sweep(tmp_path / "out", sweep_records())
    write_report(out)
    summary = json.loads((out / "summary.json").read_text())
    assert summary["overview"]["tested"] == 6 and summary["overview"]["categories"]["environment"] == 2
    assert summary["coverage"]["passing_downloads"] == 4700
    assert summary["ops_by_blocked_downloads"]["ops"][0]["op"] == "aten::upsample_bilinear2d"
    lstm = summary["ops_by_blocked_downloads"]["models_per_op"]["aten::_thnn_fused_lstm_cell"]
    assert lstm["models"] == 2 and [m["model_id"] for m in lstm["top"]] == ["org/up-lstm", "org/lstm-dtype"]
    # The plan's order, as report.md's Fix next table has it.
    assert [s["item"] for s in summary["fix_next"]["steps"]] == [
        "lower aten::upsample_bilinear2d (+ backward)",
        "lower aten::_thnn_fused_lstm_cell (+ backward)",
        "dtype unknown on the device",
    ]
    assert [c["kind"] for s in summary["fix_next"]["steps"] for c in s["causes"]] == ["op", "op", "dtype"]
    table = pd.read_parquet(out / "records.parquet")
    assert len(table) == 9
    row = table.set_index("key").loc["org/up-lstm"]
    assert [b["op"] for b in row["blockers"]] == ["aten::upsample_bilinear2d", "aten::_thnn_fused_lstm_cell"]
    assert row["stage_forward"] == "fail" and row["category"] == "device"
    pngs = sorted(p.name for p in (out / "charts").iterdir())
    assert pngs == ["coverage_vs_rank.png", "pass_rate_by_stage.png", "top_blockers.png"]
    assert all((out / "charts" / p).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" for p in pngs)
    text = (out / "report.md").read_text()
    assert "![Pass rate by stage](charts/pass_rate_by_stage.png)" in text


def test_same_records_give_the_same_files(tmp_path: Path) -> None:
    first = write_sweep(tmp_path / "a", sweep_records())
    second = write_sweep(tmp_path / "b", list(reversed(sweep_records())))  # order on disk differs
    write_report(first)
    write_report(second)
    for name in ("report.md", "summary.json", "charts/pass_rate_by_stage.png", "charts/top_blockers.png"):
        assert (first / name).read_bytes() == (second / name).read_bytes(), name


def test_golden_report(tmp_path: Path) -> None:
    """The committed report for a fixed sweep; refresh with SWEEPER_UPDATE_GOLDEN=1."""
    out = write_sweep(tmp_path / "out", sweep_records(), meta(total=9))
    text = write_report(out).read_text()
    if os.environ.get("SWEEPER_UPDATE_GOLDEN"):
        GOLDEN.write_text(text, encoding="utf-8")
    assert text == GOLDEN.read_text(encoding="utf-8")


def test_records_and_sweep_json_of_the_wrong_shape_are_tolerated(tmp_path: Path) -> None:
    out = write_sweep(tmp_path / "out", [record("org/a", 1, 10)], {"device": "trnsim", "config": "odd", "wall_seconds": "x"})
    bad = record("org/b", 2, 5).to_dict() | {"fallback_ops": ["not", "a", "dict"]}
    with open(out / "records.jsonl", "a", encoding="utf-8") as fh:
        fh.write(json.dumps(bad) + "\n")
    text = write_report(out, charts=False).read_text()
    assert "# Model sweep on trnsim" in text
    assert "| **models** | 1 |" in text and "| **wall time** | — |" in text
    assert "1 unreadable line(s) of records.jsonl were skipped." in text


def test_charts_without_downloads_count_models(tmp_path: Path) -> None:
    recs = [record("m1", 1, None), record("m2", 2, None, "fail", fail_at="forward", blockers=[reason("numerics")])]
    out = write_sweep(tmp_path / "out", recs, meta(source={"name": "zoo"}))
    text = write_report(out).read_text()
    # top_blockers.png draws the plan's steps: numerics is no root cause, so no step and no chart
    assert sorted(p.name for p in (out / "charts").iterdir()) == ["coverage_vs_rank.png", "pass_rate_by_stage.png"]
    assert "charts/top_blockers.png" not in text
