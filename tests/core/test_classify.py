"""classify turns exceptions into reasons from the closed enum, naming the op."""

from __future__ import annotations

from pathlib import Path

from sweeper.checks.classify import classify
from sweeper.records import ReasonKind
from sweeper.settings.errors import InputSynthesisError


class _Deliberate(Exception):
    reason_kind = ReasonKind.UNSUPPORTED_DTYPE
    op = "aten::mm"


def test_deliberate_attributes_win():
    reason = classify(_Deliberate("float64 refused"))
    assert (reason.kind, reason.op) == (ReasonKind.UNSUPPORTED_DTYPE, "aten::mm")


def test_sweeper_errors_carry_their_kind():
    assert classify(InputSynthesisError("cannot build 'bbox'")).kind is ReasonKind.INPUT_SYNTHESIS


def test_missing_kernel_names_the_op():
    exc = NotImplementedError("Could not run 'aten::_thnn_fused_lstm_cell' with arguments from the 'PrivateUse1' backend.")
    reason = classify(exc, stage="forward")
    assert reason.kind is ReasonKind.UNSUPPORTED_OP
    assert reason.op == "aten::_thnn_fused_lstm_cell"


def test_wrapped_cause_is_found():
    try:
        try:
            raise _Deliberate("inner")
        except _Deliberate as inner:
            raise RuntimeError("backend compiler failed") from inner
    except RuntimeError as outer:
        assert classify(outer, stage="compile").kind is ReasonKind.UNSUPPORTED_DTYPE


def test_memory_and_imports():
    assert classify(MemoryError()).kind is ReasonKind.OOM
    assert classify(ModuleNotFoundError("No module named 'x'")).kind is ReasonKind.MISSING_DEPENDENCY


def test_unknown_compile_failure_is_compile_error():
    assert classify(ValueError("weird"), stage="compile").kind is ReasonKind.COMPILE_ERROR


def test_unrecognised_error_stays_visible():
    reason = classify(ValueError("something odd\nwith detail"), stage="forward")
    assert reason.kind in (ReasonKind.UNKNOWN, ReasonKind.HARNESS, ReasonKind.MODEL_ERROR)
    assert reason.exc_type == "ValueError"
    assert "something odd" in reason.message


def test_mlir_plumbing_in_a_diagnostic_names_no_op():
    assert_fail = RuntimeError("failed to legalize operation 'torch.runtime.assert' that was explicitly marked illegal")
    reason = classify(assert_fail, stage="compile")
    assert (reason.kind, reason.op) == (ReasonKind.COMPILE_ERROR, None)
    gather = classify(RuntimeError("failed to legalize operation 'stablehlo.gather'"), stage="compile")
    assert (gather.kind, gather.op) == (ReasonKind.COMPILE_ERROR, "stablehlo.gather")


def test_a_lowering_tool_error_keeps_its_whole_diagnostic():
    from sweeper.settings.errors import SweeperError

    class ToolError(SweeperError):
        reason_kind = ReasonKind.LOWERING_TOOL_ERROR

    diagnostic = "\n".join(f"line {i}: " + "x" * 80 for i in range(40))
    reason = classify(ToolError(diagnostic, op="aten::erfinv"), stage="compile")
    assert (reason.kind, reason.op) == (ReasonKind.LOWERING_TOOL_ERROR, "aten::erfinv")
    assert diagnostic in reason.message



def _raised_in(path: Path) -> BaseException:
    """An exception whose innermost frame names ``path`` (code compiled under that name)."""
    namespace: dict = {}
    source = "def boom():\n    raise RuntimeError('expected scalar type Float but found BFloat16')\n"
    exec(compile(source, str(path), "exec"), namespace)
    try:
        namespace["boom"]()
    except RuntimeError as exc:
        return exc
    raise AssertionError("boom did not raise")


def test_a_library_frame_in_a_clone_named_sweeper_is_not_the_harness(tmp_path):
    # A user's clone is usually called "sweeper", with its .venv inside: torch's frames
    # there are not sweeper's code.
    torch_frame = tmp_path / "sweeper" / ".venv" / "lib" / "site-packages" / "torch" / "functional.py"
    assert classify(_raised_in(torch_frame), stage="load").kind is ReasonKind.UNKNOWN


def test_a_frame_in_sweepers_own_code_is_the_harness_and_in_a_device_is_not():
    import sweeper

    package = Path(sweeper.__file__).resolve().parent
    assert classify(_raised_in(package / "materialize" / "inputs.py"), stage="load").kind is ReasonKind.HARNESS
    assert classify(_raised_in(package / "devices" / "trnsim" / "kernels.py"), stage="load").kind is ReasonKind.UNKNOWN
