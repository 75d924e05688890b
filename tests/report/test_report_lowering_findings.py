"""Lowering-tool findings that name no op: one row per failing graph (its hash, failure
signature and reproducer), in report.md, summary.json and the page, instead of one
nameless row for all of them."""

from __future__ import annotations

import dataclasses
import json
import re
from pathlib import Path

import pytest
from page_browser import page_ready
from report_factory import reason, record, write_sweep

from sweeper.records import Origin
from sweeper.report.commands import write_report
from sweeper.report.findings import WHOLE_GRAPH, graph_key, reproducer, signature

GRAPH_A, GRAPH_B = "graph-9e085b05f1f7", "graph-0a1b2c3d4e5f"


def graph_message(kind: str, summary: str, repro: str | None) -> str:
    """A message as the trnsim compiler writes it for a graph no op of which fails alone."""
    where = f"\nreproducer: {repro}" if repro else ""
    return (f"LoweringToolError: {kind} graph: Torch-MLIR failed on the graph without naming an op, and no op of it "
            f"fails alone (a lowering-tool finding, not a chip gap): {summary}{where}\nfull diagnostic:\n{summary}\n"
            "TorchMlirCompilerError: Lowering Torch Backend IR -> StableHLO Backend IR failed")


CONSTANT_INT = "failed to legalize operation 'torch.constant.int': %1 = \"torch.constant.int\"() : () -> !torch.int"
VERIFIER = "'stablehlo.dot_general' op failed to verify: %42 rank mismatch"


def _tool(model_id: str, rank: int, op: str | None, message: str):
    blocker = dataclasses.replace(reason("lowering_tool_error", op, message), origin=Origin.LOWERING_TOOL,
                                  stage="compile")
    return record(model_id, rank, 1000 - rank, "fail", fail_at="compile", blockers=[blocker])


def finding_records(out: Path) -> list:
    repros = out / "repros"
    return [
        _tool("org/a1", 1, None, graph_message("backward", CONSTANT_INT, f"{repros}/{GRAPH_A}.py")),
        _tool("org/a2", 2, None, graph_message("backward", CONSTANT_INT.replace("%1", "%7"), f"{repros}/{GRAPH_A}.py")),
        _tool("org/b", 3, None, graph_message("forward", VERIFIER, f"{repros}/{GRAPH_B}.py")),
        _tool("org/no-repro", 4, None, graph_message("forward", VERIFIER, None)),
        _tool("org/op", 5, "aten::index_put",
              "LoweringToolError: forward graph: Torch-MLIR failed to lower aten::index_put, which the profile marks "
              f"native (a lowering-tool finding, not a chip gap): boom\nreproducer: {repros}/index_put.py\n"
              "full diagnostic:\nboom"),
        record("org/pass", 6, 10),
    ]


def test_message_parts() -> None:
    message = graph_message("backward", CONSTANT_INT, f"/abs/out/repros/{GRAPH_A}.py")
    assert reproducer(message) == f"repros/{GRAPH_A}.py" and graph_key(reproducer(message)) == GRAPH_A
    assert signature(message) == "backward graph: failed to legalize operation 'torch.constant.int': " \
                                 "%… = \"torch.constant.int\"() : () -> !torch.int"
    assert reproducer("reproducer: /x/repros/a b](javascript:x).py") == ""  # only plain file names become links
    assert reproducer("no reproducer here") == "" and graph_key("repros/index_put.py") == ""


@pytest.fixture
def report(tmp_path: Path) -> tuple[Path, str, dict]:
    out = tmp_path / "out"
    write_sweep(out, finding_records(out))
    text = write_report(out, charts=False).read_text()
    return out, text, json.loads((out / "summary.json").read_text())


def test_summary_groups_the_tools_failures_by_diagnostic(report) -> None:
    _, _, summary = report
    rows = [(f["op"], f["signature"], f["models"], f["reproducer"]) for f in summary["root_causes"]["lowering_tool"]]
    assert rows == [
        # One diagnostic met in two models (value names differ): one bug, one reproducer.
        ("", "failed to legalize operation 'torch.constant.int'", 2, f"repros/{GRAPH_A}.py"),
        # The model without a reproducer failed with the same diagnostic: the same bug.
        ("", "'stablehlo.dot_general' op failed to verify: %N rank mismatch", 2, f"repros/{GRAPH_B}.py"),
        ("aten::index_put", "boom", 1, "repros/index_put.py"),  # what the tool said, not the verdict's words
    ]


def test_report_md_names_each_bug_by_its_diagnostic_with_its_reproducer(report) -> None:
    _, text, _ = report
    section = text.split("## Lowering-tool bugs by diagnostic", 1)[1].split("\n## ", 1)[0]
    rows = [line for line in section.splitlines() if line.startswith("| ") and "(repros/" in line]
    assert len(rows) == 3
    first = rows[0].split(" | ")
    assert first[0] == f"| {WHOLE_GRAPH}" and first[1] == "failed to legalize operation 'torch.constant.int'"
    assert first[-1] == f"[graph-9e085b05f1f7.py](repros/{GRAPH_A}.py) ⚠ not checked |"  # no sidecar: never run
    assert rows[2].startswith("| `aten::index_put` | boom | 1 |")
    plan = text.split("## Fix next", 1)[1].split("\n## ", 1)[0]
    assert (f"| 1 | {WHOLE_GRAPH}: failed to legalize operation 'torch.constant.int' | lowering tool | 2 | 2.0k | "
            f"40.2% | [graph-9e085b05f1f7.py](repros/{GRAPH_A}.py) |") in plan


def test_page_data_carries_the_findings(report) -> None:
    out, _, _ = report
    page = (out / "index.html").read_text(encoding="utf-8")
    blob = re.search(r'<script type="application/json" id="sweep-data">(.*?)</script>', page, re.S)
    rows = json.loads(blob.group(1))["lowering_tool"]
    assert [(r[1], r[2], r[3], r[7]) for r in rows] == [
        (WHOLE_GRAPH, True, GRAPH_A, f"repros/{GRAPH_A}.py"),
        (WHOLE_GRAPH, True, GRAPH_B, f"repros/{GRAPH_B}.py"),
        (WHOLE_GRAPH, True, "", ""),
        ("aten::index_put", False, "", "repros/index_put.py"),
    ]
    assert rows[0][8] == ["org/a1", "org/a2"]


def test_page_shows_a_row_per_graph_with_a_reproducer_link(report, browser) -> None:
    out, _, _ = report
    page_ready(browser, (out / "index.html").as_uri())
    table = browser.find_element("id", "lowering-tool")
    rows = table.find_elements("tag name", "tr")[1:]
    assert len(rows) == 4
    cells = rows[0].find_elements("tag name", "td")
    assert cells[1].text == f"{WHOLE_GRAPH} {GRAPH_A}"
    link = rows[0].find_element("tag name", "a")
    assert link.text == f"{GRAPH_A}.py" and link.get_attribute("href").endswith(f"/out/repros/{GRAPH_A}.py")
    assert rows[2].find_elements("tag name", "a") == []  # nothing to link without a reproducer
