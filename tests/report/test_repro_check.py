"""Reproducers are run, and one that does not fail with its bug's diagnostic says so:
`sweep check-repros OUT` runs each script a maintainer would run, keeps what it printed
beside it, exits 1 when any does not reproduce, and the next `sweep report` marks it.
The lowering tool's version, which decides these verdicts, is named in the report's header."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest
from report_factory import meta, reason, record, write_sweep

from sweeper.cli import main
from sweeper.records import Origin
from sweeper.report.commands import write_report

DEPTHWISE = "expects input feature dimension (96) to be a multiple of feature_group_count. Got feature_group_count = 576."
CONSTANT = "failed to legalize operation 'torch.constant.int'"
CONV = "aten::convolution_backward"


def _message(said: str, repro: str) -> str:
    return (f"LoweringToolError: backward graph: Torch-MLIR failed to lower {CONV}, which the profile marks native (a "
            f"lowering-tool finding, not a chip gap): {said}\nreproducer: /x/out/repros/{repro}\nfull diagnostic:\n{said}")


def _tool(model_id: str, rank: int, said: str, repro: str):
    blocker = dataclasses.replace(reason("lowering_tool_error", CONV, _message(said, repro)),
                                  origin=Origin.LOWERING_TOOL, stage="compile")
    return record(model_id, rank, 1000 - rank, "fail", fail_at="compile", blockers=[blocker])


def _script(exit_code: int, said: str) -> str:
    """A reproducer as a maintainer runs it: prints the tool's diagnostic and exits 1 while the bug stands."""
    return f"import sys\nprint({said!r}, file=sys.stderr)\nsys.exit({exit_code})\n"


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    out = write_sweep(tmp_path / "out", [
        _tool("org/mobilenet", 1, DEPTHWISE, "convolution_backward-aaaa1111.py"),
        _tool("org/video", 2, CONSTANT, "convolution_backward-bbbb2222.py"),
        _tool("org/fixed", 3, "failed to legalize operation 'torch.operator'", "convolution_backward-cccc3333.py"),
        record("org/pass", 4, 10),
    ], meta(versions={"torch": "2.13.0", "torch-mlir": "20261001", "transformers": "5.25.0"}))  # fmt: skip
    repros = out / "repros"
    repros.mkdir()
    # The first reproduces its diagnostic (another group size: the same bug); the second fails
    # with another diagnostic than its group's; the third lowers (fixed upstream).
    (repros / "convolution_backward-aaaa1111.py").write_text(_script(1, DEPTHWISE.replace("576", "32")))
    (repros / "convolution_backward-bbbb2222.py").write_text(_script(1, "error: 'stablehlo.convolution' op bad"))
    (repros / "convolution_backward-cccc3333.py").write_text(_script(0, ""))
    return out


def _sweep(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str]:
    with pytest.raises(SystemExit) as done:
        main(list(args))
    return int(done.value.code or 0), capsys.readouterr().out


def test_check_repros_runs_each_reproducer_and_the_report_marks_those_that_do_not_reproduce(
        folder: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out = _sweep(capsys, "check-repros", str(folder))
    assert code == 1
    assert "1 of 3 reproducers fail with their bug's diagnostic" in out
    assert any(line.split()[:2] == ["reproduces", "repros/convolution_backward-aaaa1111.py"]
               for line in out.splitlines()), out
    checked = json.loads((folder / "repros" / "convolution_backward-bbbb2222.json").read_text())["checked"]
    assert checked["exit"] == 1 and checked["signature"] == "error: 'stablehlo.convolution' op bad"

    text = write_report(folder, charts=False).read_text()
    bugs = text.split("## Lowering-tool bugs by diagnostic", 1)[1].split("\n## ", 1)[0]
    rows = {line.split(" | ")[1]: line for line in bugs.splitlines() if line.startswith("| `")}
    depthwise = rows["expects input feature dimension (N) to be a multiple of feature\\_group\\_count. Got "
                     "feature\\_group\\_count = N."]
    assert depthwise.endswith("[convolution\\_backward-aaaa1111.py](repros/convolution_backward-aaaa1111.py) |")
    assert ("⚠ does not reproduce this diagnostic (it fails with: error: 'stablehlo.convolution' op bad)"
            in rows["failed to legalize operation 'torch.constant.int'"])
    assert "⚠ does not reproduce: it lowers" in rows["failed to legalize operation 'torch.operator'"]
    # The index of every reproducer says the same, with the command that runs it.
    index = (folder / "details" / "lowering-tool.md").read_text().split("## Reproducers", 1)[1]
    assert "| fails otherwise | `python repros/convolution_backward-bbbb2222.py` |" in index
    assert "| reproduces | `python repros/convolution_backward-aaaa1111.py` |" in index


def test_check_repros_of_a_folder_without_records_is_a_one_line_error(tmp_path: Path,
                                                                      capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as done:
        main(["check-repros", str(tmp_path / "nowhere")])
    err = capsys.readouterr().err
    assert done.value.code != 0 and "Traceback" not in err and len(err.strip().splitlines()) == 1


def test_the_lowering_tools_version_is_in_the_header_and_the_bugs_section(folder: Path) -> None:
    text = write_report(folder, charts=False).read_text()
    header = text.split("## Summary", 1)[0]
    assert "torch 2.13.0, torch-mlir 20261001, transformers 5.25.0" in header
    assert "Failures of the lowering tool (Torch-MLIR 20261001) on ops the device profile calls native" in text
