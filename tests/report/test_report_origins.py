"""The report counts each model under the origin of its blockers, in one vocabulary."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

from report_factory import reason, record, write_sweep

from sweeper.records import Origin
from sweeper.report.commands import write_report


def _by(origin: Origin, kind: str, op: str | None = None):
    """A one-blocker list whose origin the CPU control (or the kind) set."""
    return [dataclasses.replace(reason(kind, op), origin=origin, stage="compile")]


def origin_records() -> list:
    device_op = reason("unsupported_op", "aten::upsample_bilinear2d")
    return [
        record("org/pass", 1, 1000),
        record("org/device", 2, 800, "fail", fail_at="forward", blockers=[device_op]),
        record("org/tool", 3, 600, "fail", fail_at="compile", blockers=_by(Origin.LOWERING_TOOL, "lowering_tool_error", "aten::slice_scatter")),
        # A device kind the CPU control repeated: the harness's, not the device's.
        record("org/ours", 4, 400, "fail", fail_at="compile", blockers=_by(Origin.HARNESS, "compile_error", "aten::foo")),
        record("org/model", 5, 200, "fail", fail_at="forward", blockers=_by(Origin.MODEL, "model_error")),
        record("org/gated", 6, 100, "error", blockers=[reason("gated")]),
    ]


def test_each_origin_is_counted_apart_and_only_the_device_in_its_rate(tmp_path: Path) -> None:
    out = write_sweep(tmp_path / "out", origin_records())
    text = write_report(out, charts=False).read_text()
    summary = json.loads((out / "summary.json").read_text())
    assert summary["overview"]["categories"] == {
        "pass": 1, "device": 1, "lowering_tool": 1, "harness": 1, "model": 1, "environment": 1, "skip": 0,
    }  # fmt: skip
    assert summary["overview"]["pass_rate"] == 0.5  # 1 of pass + device fail
    assert "**Device pass rate: 50.0%** (1 of the 2 models the device itself decided" in text
    for label in ("| device fail | 1 |", "| lowering tool | 1 |", "| harness | 1 |", "| model | 1 |", "| environment | 1 |"):
        assert label in text
    # The ops ranking holds the device's op alone: the tool's and our failures have their own sections.
    assert [op["op"] for op in summary["ops_by_blocked_downloads"]["ops"]] == ["aten::upsample_bilinear2d"]
    assert [f["op"] for f in summary["root_causes"]["lowering_tool"]] == ["aten::slice_scatter"]
    # The plan fixes the device's op and the tool's bug; the harness's and the model's failures stay.
    assert [c["kind"] for s in summary["fix_next"]["steps"] for c in s["causes"]] == ["op", "tool"]
    assert [f["op"] for f in summary["harness_failures"]] == ["aten::foo"]
    harness = text.split("## Harness failures", 1)[1].split("\n## ", 1)[0]
    assert "1 model(s) have at least one" in harness and "org/ours" in harness


def test_the_breakdowns_count_a_lowering_tool_finding_as_tried_not_as_a_device_verdict(tmp_path: Path) -> None:
    out = write_sweep(tmp_path / "out", origin_records())
    text = write_report(out, charts=False).read_text()
    library = text.split("## By library", 1)[1].split("\n## ", 1)[0]
    header = (
        "| library_name | models | tried | passing end to end | end-to-end pass rate | downloads | downloads passing "
        "| not tried | device verdicts | device pass rate (device verdicts only) |"
    )
    assert header in library
    # 6 models: 5 reached the device (pass, device, tool, harness, model), 1 of them passes end to end,
    # 1,000 of 3,100 downloads; 2 device verdicts (pass, device) give the device pass rate; 1 gated.
    assert "| transformers | 6 | 5 | 1 | 20.0% | 3.1k | 32.3% | 1 | 2 | 50.0% |" in library
