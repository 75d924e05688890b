"""classify turns exceptions into reasons from the closed enum, naming the op."""

from __future__ import annotations

from sweeper.classify import classify
from sweeper.errors import InputSynthesisError
from sweeper.records import ReasonKind


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
    from sweeper.errors import SweeperError

    class ToolError(SweeperError):
        reason_kind = ReasonKind.LOWERING_TOOL_ERROR

    diagnostic = "\n".join(f"line {i}: " + "x" * 80 for i in range(40))
    reason = classify(ToolError(diagnostic, op="aten::erfinv"), stage="compile")
    assert (reason.kind, reason.op) == (ReasonKind.LOWERING_TOOL_ERROR, "aten::erfinv")
    assert diagnostic in reason.message
