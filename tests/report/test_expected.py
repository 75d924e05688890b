"""Expected results: ``sweep expect RUN --write expected.csv`` and ``sweep diff --expected``,
their exit codes and the lines they print."""

from __future__ import annotations

from pathlib import Path

import pytest
from report_factory import reason, record, write_sweep

from sweeper.cli import main

OP = "unsupported_op"


def _night(folder: Path, changes: dict[str, object] | None = None) -> Path:
    """Three models: one passes, two fail on an op; ``changes`` replaces a model's record."""
    records = {
        "a/ok": record("a/ok", 1, 1000),
        "a/x": record("a/x", 2, 900, "fail", fail_at="forward", blockers=[reason(OP, "aten::x", "aten::x is not supported (1.5 ms)")]),
        "a/y": record("a/y", 3, 800, "fail", fail_at="forward", blockers=[reason(OP, "aten::y")]),
    }
    records.update(changes or {})
    return write_sweep(folder, list(records.values()))


def _sweep(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    with pytest.raises(SystemExit) as done:
        main(list(args))
    out, err = capsys.readouterr()
    return int(done.value.code or 0), out, err


def test_expect_writes_a_baseline_and_keeps_its_tracking_column(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run, csv_path = _night(tmp_path / "night"), tmp_path / "expected.csv"
    code, out, _ = _sweep(capsys, "expect", str(run), "--write", str(csv_path))
    assert code == 0 and "3 models" in out
    lines = csv_path.read_text().splitlines()
    assert lines[0] == "model,outcome,blocking_op,signature,tracking"
    assert lines[1:] == ["a/ok,pass,,,", "a/x,device,aten::x,unsupported_op: aten::x is not supported (N ms),",
                         "a/y,device,aten::y,unsupported_op: unsupported_op aten::y,"]
    csv_path.write_text(csv_path.read_text().replace("(N ms),\n", "(N ms),issue-12\n"))
    _sweep(capsys, "expect", str(run), "--write", str(csv_path))
    assert "a/x,device,aten::x,unsupported_op: aten::x is not supported (N ms),issue-12" in csv_path.read_text()
    assert _sweep(capsys, "diff", "--expected", str(csv_path), str(run))[:2] == (0, "every model as expected (" + str(csv_path) + ")\n")


def test_a_model_worse_than_expected_exits_1_and_says_which_with_the_reason(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    csv_path = tmp_path / "expected.csv"
    _sweep(capsys, "expect", str(_night(tmp_path / "night-1")), "--write", str(csv_path))
    worse = _night(tmp_path / "night-2", {
        "a/ok": record("a/ok", 1, 1000, "fail", fail_at="backward", blockers=[reason(OP, "aten::z", "aten::z is not supported")]),
        "a/y": record("a/y", 3, 800, "fail", fail_at="forward", blockers=[reason(OP, "aten::w")]),
    })  # fmt: skip
    code, out, _ = _sweep(capsys, "diff", "--expected", str(csv_path), str(worse))
    assert code == 1
    lines = out.splitlines()
    assert lines[0] == "worse than expected: 2 models"
    assert "  a/ok: expected pass, now device (unsupported_op aten::z) — aten::z is not supported" in lines
    assert any(ln.startswith("  a/y: expected device (unsupported_op aten::y), now device (unsupported_op aten::w)") for ln in lines)
    assert not any(ln.startswith(("- ", "+ ")) for ln in lines)  # nothing to accept: fix it


def test_a_model_better_than_expected_exits_0_and_prints_the_lines_to_change(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    csv_path = tmp_path / "expected.csv"
    _sweep(capsys, "expect", str(_night(tmp_path / "night-1")), "--write", str(csv_path))
    csv_path.write_text(csv_path.read_text().replace("(N ms),\n", "(N ms),issue-12\n"))
    better = _night(tmp_path / "night-2", {"a/x": record("a/x", 2, 900), "a/new": record("a/new", 4, 10)})
    code, out, _ = _sweep(capsys, "diff", "--expected", str(csv_path), str(better))
    assert code == 0
    lines = out.splitlines()
    assert "better than expected: 1 model" in lines
    assert "  a/x: expected device (unsupported_op aten::x), now pass [tracking: issue-12]" in lines
    assert f"lines of {csv_path} to change (each \"-\" line becomes the \"+\" line below it):" in lines
    change = lines.index("- a/x,device,aten::x,unsupported_op: aten::x is not supported (N ms),issue-12")
    assert lines[change + 1] == "+ a/x,pass,,,issue-12"
    assert "new models (no expected line): 1 model" in lines and "+ a/new,pass,,," in lines


@pytest.mark.parametrize(
    ("args", "words"),
    [(["diff", "RUN"], "needs two sweep folders"), (["diff", "RUN", "RUN", "--expected", "CSV"], "give one sweep folder"),
     (["diff", "RUN", "--expected", "MISSING"], "cannot read the expected results"),
     (["diff", "RUN", "--expected", "BAD"], "is not an expected-results file")],
)
def test_bad_expected_input_is_a_one_line_error(args: list[str], words: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run = _night(tmp_path / "night")
    (tmp_path / "bad.csv").write_text("a,b\n1,2\n")
    subs = {"RUN": str(run), "CSV": str(tmp_path / "bad.csv"), "MISSING": str(tmp_path / "none.csv"), "BAD": str(tmp_path / "bad.csv")}
    code, _, err = _sweep(capsys, *[subs.get(a, a) for a in args])
    assert code == 2 and err.startswith("sweep: error:") and words in err and len(err.strip().splitlines()) == 1
