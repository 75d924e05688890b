"""report.md's row budget: a sweep that meets many ops, causes, libraries and formats still
gets a report.md within ``MAX_LINES`` (the Generation section's short form included), each
long section keeps its first rows and links to its details page, and the rows report.md
leaves out are on that page with the same figures."""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

from report_factory import meta, reason, record, write_sweep
from test_generation_section import STAGES, _generation
from test_shapes_section import _shapes

from sweeper.records import Origin
from sweeper.report.budget import ROWS
from sweeper.report.commands import write_report
from sweeper.report.document import MAX_LINES

N = 30  # rows each long section has: far past the budget
OTHERS = [s for s in STAGES if s != "generate"]  # the stages of a model that does not generate


def _blocked(model_id: str, rank: int, kind: str, op: str, *, origin: Origin, stage: str = "compile", **extra):
    blocker = dataclasses.replace(reason(kind, op), origin=origin, stage=stage)
    stages = STAGES if stage == "generate" else OTHERS
    return record(model_id, rank, 100_000 - rank, "fail", fail_at=stage, blockers=[blocker], stages=stages, **extra)


def _records() -> list:
    """N of each: libraries, formats, fallback ops, graph-break causes, lowering-tool bugs,
    harness failures, nondeterministic models, failures at a shape, padding differences and
    models that generate with a blocker of their own."""
    random = {"forward": {"max_abs": 0.8, "max_rel": 0.4, "within": False},
              "nondeterministic": {"max_abs": 0.7, "max_rel": 0.35, "within": False}}
    padded = {"status": "fail", "origin": "model", "bucket": 16, "real": 12, "output": "logits", "max_abs": 1.0}
    made = []
    for i in range(N):
        r = 10 * i + 1
        made += [
            dataclasses.replace(record(f"lib/m{i:02d}", r, 90_000 - r, stages=OTHERS,
                                       fallback_ops={f"aten::fallback_{i:02d}": 1 + i},
                                       graph_breaks=1, graph_break_reasons=[f"break cause {i:02d}"],
                                       max_abs_diff=0.8, numerics=random,
                                       shapes=_shapes("static", padding=padded)), library_name=f"lib{i:02d}"),
            dataclasses.replace(record(f"fmt/m{i:02d}-GGUF", r + 1, 80_000 - r, "skip", fail_at="load", stages=OTHERS,
                                       blockers=[reason("not_pytorch", f"fmt{i:02d}", "not a PyTorch model")]),
                                library_name=f"fmt{i:02d}"),
            _blocked(f"tool/m{i:02d}", r + 2, "lowering_tool_error", f"aten::tool_{i:02d}", origin=Origin.LOWERING_TOOL),
            _blocked(f"ours/m{i:02d}", r + 3, "compile_error", f"aten::ours_{i:02d}", origin=Origin.HARNESS),
            _blocked(f"shape/m{i:02d}", r + 4, "unsupported_op", f"aten::shape_{i:02d}", origin=Origin.DEVICE,
                     stage="shapes", shapes=_shapes("fails", failed_at="longer")),
            _blocked(f"gen/m{i:02d}", r + 5, "unsupported_op", f"aten::gen_{i:02d}", origin=Origin.DEVICE,
                     stage="generate", task=f"task-{i:02d}", generation=_generation()),
        ]
    return made


def _table_rows(text: str) -> list[str]:
    return [line for line in text.splitlines() if line.startswith("| ") and not line.startswith("| --")]


def _section(report: str, heading: str) -> str:
    return report.split(f"\n## {heading}\n", 1)[1].split("\n## ", 1)[0]


def test_many_rows_per_section_keep_report_md_short_and_move_to_the_pages(tmp_path: Path) -> None:
    write_sweep(tmp_path, _records(), meta(config={"device": "trnsim", "stages": STAGES, "collect_all": True}))
    report = write_report(tmp_path).read_text(encoding="utf-8")
    assert report.count("\n") <= MAX_LINES
    assert "## Generation" in report and "## Charts" in report  # they fit beside the budgeted sections
    details = tmp_path / "details"
    # Each section: its heading, its page, a row past the budget, and what its "All N" line names.
    moved = [
        ("By library", "libraries.md", "| lib29 |", f"All {N + N + 1} libraries"),  # libNN, fmtNN, transformers
        ("Not PyTorch formats", "formats.md", "`fmt29`", f"All {N} formats that are not PyTorch"),
        ("CPU fallbacks", "fallbacks-and-breaks.md", "`aten::fallback_29`", f"All {N} CPU fallbacks"),
        ("Graph breaks", "fallbacks-and-breaks.md", "break cause 29", f"All {N} graph-break causes"),
        ("Lowering-tool bugs by diagnostic", "lowering-tool.md", "`aten::tool_29`", f"All {N} lowering-tool bugs"),
        ("Harness failures", "failing-models.md", "`aten::ours_29`", f"All {N} harness failures"),
    ]
    for heading, name, row, more in moved:
        section, page = _section(report, heading), (details / name).read_text(encoding="utf-8")
        shown = _table_rows(section)
        assert len(shown) == ROWS + 1, (heading, shown)  # the header and the budget
        assert more in section and f"](details/{name})" in section, heading
        assert row not in section and row in page, (heading, row)
        assert all(line in page for line in shown[1:]), heading  # the same figures on both sides

    numerics = _section(report, "Numerics")
    page = (details / "numerics.md").read_text(encoding="utf-8")
    assert f"{N} nondeterministic models: two CPU runs differ" in numerics
    assert len([line for line in _table_rows(numerics) if "lib/m" in line]) == ROWS
    assert "[lib/m29]" not in numerics and "[lib/m29]" in page
    assert f"all {N} nondeterministic models: [details/numerics.md](details/numerics.md)." in numerics

    shapes = _section(report, "Shapes")
    page = (details / "shapes.md").read_text(encoding="utf-8")
    assert f"Failures at a shape by blocker ({N}): " in shapes and "[details/shapes.md](details/shapes.md)" in shapes
    assert re.search(rf"differs on the CPU too \(the model's masking\): {N} \(.* and {N - ROWS} more\)", shapes)
    assert "aten::shape_29" not in shapes and "`aten::shape_29`" in page
    assert "[lib/m29]" not in shapes and "| [lib/m29]" in page  # every model whose padding differs
