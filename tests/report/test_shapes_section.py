"""The report's Shapes section, recomputed from records.jsonl with plain json (nothing of
sweeper on the reading side): on records made here and on both published reports."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from report_factory import meta, reason, record, write_sweep

from sweeper.records import Reason, ReasonKind
from sweeper.report.commands import write_report

REPO = Path(__file__).resolve().parents[2]
PUBLISHED = sorted(p.parent for p in (REPO / "reports").glob("*/records.jsonl"))
VERDICTS = {"symbolic": "one graph for every shape (symbolic)", "static": "recompile for each new shape (static)",
            "fails": "fail at a shape"}  # fmt: skip


def _shapes(verdict: str, *, per_shape: int = 1, padding: dict | None = None, failed_at: str | None = None) -> dict:
    found: dict[str, Any] = {"verdict": verdict, "workload_lengths": 8,
                             "workload_compiles": per_shape * 8 if verdict == "static" else per_shape,
                             "padding": padding or {"status": "not_checked", "why": "no attention mask"}}
    if failed_at:
        found["failed_at"] = {"shape": failed_at, "sizes": {"input_ids": [2, 24]}}
    return found


def _records() -> list:
    passing = {"status": "pass", "bucket": 16, "real": 12, "output": "logits", "max_abs": 0.0}
    at_longer = Reason(ReasonKind.UNSUPPORTED_OP, "no lowering", op="aten::upsample_bilinear2d", stage="shapes")
    padded = Reason(ReasonKind.NUMERICS, "padding to a bucket of 16 changes the logits", stage="shapes")
    return [
        record("org/static", 1, 5000, shapes=_shapes("static", padding=passing)),
        record("org/static-breaks", 2, 3000, shapes=_shapes("static", per_shape=3)),
        record("org/symbolic", 3, 2000, shapes=_shapes("symbolic", per_shape=1, padding=passing)),
        record("org/longer", 4, 1000, "fail", fail_at="shapes", blockers=[at_longer],
               shapes=_shapes("fails", failed_at="longer")),
        record("org/pad-device", 5, 700, "fail", fail_at="shapes", blockers=[padded],
               shapes=_shapes("static", padding={**passing, "status": "fail", "origin": "device"})),
        record("org/pad-model", 6, 500, shapes=_shapes("static", padding={**passing, "status": "fail", "origin": "model",
                                                                           "output": "last_hidden_state"})),
        record("org/blocked", 7, 400, "fail", fail_at="compile", blockers=[reason("unsupported_op", "aten::histc")]),
    ]


def recompute(records: list[dict]) -> dict[str, Any]:
    """The section's figures from raw records."""
    ran = [r for r in records if (r.get("shapes") or {}).get("verdict") in VERDICTS]
    verdicts = {v: (sum(1 for r in ran if r["shapes"]["verdict"] == v),
                    sum(r.get("downloads") or 0 for r in ran if r["shapes"]["verdict"] == v)) for v in VERDICTS}
    static = [r for r in ran if r["shapes"]["verdict"] == "static"]
    workload = sum(r["shapes"]["workload_compiles"] for r in static)
    saved = sum(r["shapes"]["workload_compiles"] - r["shapes"]["workload_compiles"] // 8 for r in static)
    failures: dict[tuple, set] = {}
    for r in records:
        if r["status"] == "pass":
            continue
        for b in r.get("blockers") or []:
            if b.get("stage") == "shapes":
                failures.setdefault((b["kind"], b.get("op") or "", b["origin"]), set()).add(r["model_id"])
    padding: dict[tuple, int] = {}
    for r in records:
        shapes = r.get("shapes") or {}
        pad = shapes.get("padding")
        if isinstance(shapes.get("components"), dict):
            found = [p["padding"] for p in shapes["components"].values() if isinstance(p.get("padding"), dict)]
            pad = next((p for p in found if p.get("status") == "fail"), found[0] if found else None)
        if isinstance(pad, dict) and pad.get("status"):
            key = (pad["status"], pad.get("origin") or "")
            padding[key] = padding.get(key, 0) + 1
    return {"verdicts": verdicts, "workload": workload, "saved": saved, "static_models": len(static),
            "failures": {k: len(v) for k, v in failures.items()}, "padding": padding}


def _section(report: str) -> str:
    return report.split("\n## Shapes\n", 1)[1].split("\n## ", 1)[0]


def _number(text: str) -> int:
    return int(text.replace(",", ""))


def check_report(report: str, records: list[dict], *, page: str | None = None, weighted: bool = True) -> dict[str, Any]:
    """Assert the section's verdict table, workload line and failure and padding counts
    against ``recompute``: the tables of failures and padding on the details page (``page``),
    or in report.md where it was rendered before the page held them; returns the figures."""
    want = recompute(records)
    section = _section(report)
    for verdict, label in VERDICTS.items():
        row = re.search(rf"^\| {re.escape(label)} \| ([\d,]+) \|", section, re.M)
        assert row, (label, section[:2000])
        assert _number(row.group(1)) == want["verdicts"][verdict][0], (verdict, row.group(0))
    if want["static_models"]:
        line = re.search(r"recompile ([\d,]+) compiles in all .* would save ([\d,]+)\.", section)
        assert line and (_number(line.group(1)), _number(line.group(2))) == (want["workload"], want["saved"])
    # One count of the models that ran the stage: those with a verdict, the rest said apart.
    ran = sum(n for n, _ in want["verdicts"].values())
    assert f"{ran:,} models ran the stage; {len(records) - ran:,} did not reach it" in section
    if page is not None:  # report.md's line counts the padding outcomes the page's table has
        said = dict(re.findall(r"(same outputs on the real positions|not checked|differs[^:;]*): ([\d,]+)", section))
        assert sorted(_number(n) for n in said.values()) == sorted(want["padding"].values()), said
    whole = page if page is not None else section
    failures = whole.split("# Failures at a shape\n", 1)[1].split("# Padding", 1)[0]
    rows = re.findall(r"^\| ([\w\\]+) \| (?:`([^`]*)`)? \| ([\w\\]+) \| [^|]* \| ([\d,]+) \|", failures, re.M)
    plain = {(k.replace("\\", ""), o, g.replace("\\", "")): _number(n) for k, o, g, n in rows}
    assert plain == want["failures"]
    padding = whole.split("# Padding to buckets\n", 1)[1]
    counts = [_number(n) for n in re.findall(r"^\| (?:same|differs|not checked)[^|]* \| ([\d,]+) \|", padding, re.M)]
    assert sorted(counts) == sorted(want["padding"].values())
    return want


def test_the_shapes_section_counts_what_the_records_hold(tmp_path: Path):
    write_sweep(tmp_path, _records(), meta(config={"device": "trnsim", "stages": [
        "load", "to_device", "forward", "backward", "compile", "shapes"], "collect_all": True}))
    write_report(tmp_path)
    report = (tmp_path / "report.md").read_text(encoding="utf-8")
    records = [json.loads(line) for line in (tmp_path / "records.jsonl").read_text().splitlines()]
    page = (tmp_path / "details" / "shapes.md").read_text(encoding="utf-8")
    want = check_report(report, records, page=page)
    assert want["verdicts"]["static"] == (4, 9200) and want["workload"] == 8 + 24 + 8 + 8
    assert want["failures"] == {("unsupported_op", "aten::upsample_bilinear2d", "device"): 1,
                                ("numerics", "", "device"): 1}
    section = _section(report)
    # report.md: each blocker and each model whose padding differs in a line, the tables on the page.
    assert "Failures at a shape by blocker (2): unsupported\\_op `aten::upsample_bilinear2d` (device, at longer, " \
           "1 models)" in section
    assert "differs on the CPU too (the model's masking): 1 ([org/pad-model]" in section
    assert "[details/shapes.md](details/shapes.md)" in section
    assert "### " not in section and section.count("| --- |") == 1  # the verdicts' table alone
    assert "| [org/pad-model]" in page and "`last_hidden_state`" in page  # the output that differs is named
    assert "longer" in page.split("## Failures at a shape", 1)[1]  # the shape it failed at
    summary = json.loads((tmp_path / "summary.json").read_text())["shapes"]
    assert summary["static_compiles"] == want["workload"] and summary["saved_compiles"] == want["saved"]


def test_a_sweep_without_the_stage_says_so(tmp_path: Path):
    stages = ["load", "to_device", "forward", "backward", "compile"]
    write_sweep(tmp_path, [record("org/a", 1, 10, stages=stages)], meta(config={"device": "trnsim", "stages": stages}))
    write_report(tmp_path)
    assert "did not run the shapes stage" in _section((tmp_path / "report.md").read_text(encoding="utf-8"))


@pytest.mark.parametrize("folder", PUBLISHED, ids=[p.name for p in PUBLISHED])
def test_the_published_reports_shapes_section_agrees_with_their_records(folder: Path):
    records = [json.loads(line) for line in (folder / "records.jsonl").read_text(encoding="utf-8").splitlines() if line]
    report = (folder / "report.md").read_text(encoding="utf-8")
    shapes_page = folder / "details" / "shapes.md"  # absent from a report rendered before it had the page
    page = shapes_page.read_text(encoding="utf-8") if shapes_page.is_file() else None
    if "shapes" not in json.loads((folder / "sweep.json").read_text(encoding="utf-8"))["config"]["stages"]:
        # Swept before the stage existed: no record has shapes findings to count.
        assert not any(r.get("shapes") for r in records)
        return
    want = check_report(report, records, page=page)
    assert sum(n for n, _ in want["verdicts"].values()) > 0  # the stage ran in the published sweep
