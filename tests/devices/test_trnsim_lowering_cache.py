"""Lowering verdicts reused within a process: the same graph gets the same verdict without
lowering again, a different graph is lowered on its own, and a runaway lowering is still
stopped by the time and memory limits."""

from __future__ import annotations

import pytest
import torch
from torch.fx.experimental.proxy_tensor import make_fx
from trnsim_helpers import root_cause, run_compiled

from sweeper.records import ReasonKind

pytest.importorskip("torch_mlir")


def _children() -> int:
    """Lowering children started so far in this process."""
    from sweeper.devices.trnsim import phases

    entry = phases.snapshot().get("isolate")
    return entry.count if entry else 0


def _compile_error(fn, x) -> tuple[ReasonKind, str | None]:
    with pytest.raises(Exception) as info:
        run_compiled(fn, x)
    cause = root_cause(info.value)
    return cause.reason_kind, cause.op


def test_a_failing_op_is_still_reported_when_the_same_graph_compiles_again(trnsim, lowering):
    x = torch.rand(4, device="trnsim") - 0.5
    first = _compile_error(torch.erfinv, x)
    started = _children()
    torch._dynamo.reset()
    with trnsim.recording() as rec:
        again = _compile_error(torch.erfinv, x)
    assert first == again == (ReasonKind.LOWERING_TOOL_ERROR, "aten::erfinv")
    assert any("aten::erfinv" in p for p in rec.compile_problems)
    assert _children() == started  # the verdict came from the cache, not a new lowering


def test_other_graphs_are_lowered_on_their_own(trnsim, lowering):
    x = torch.rand(4, device="trnsim") - 0.5
    assert _compile_error(torch.erfinv, x) == (ReasonKind.LOWERING_TOOL_ERROR, "aten::erfinv")
    torch._dynamo.reset()
    out = run_compiled(torch.sin, x)  # same input metas, other code: lowers and passes
    torch.testing.assert_close(out.cpu(), torch.sin(x.cpu()))
    torch._dynamo.reset()
    started = _children()
    # same code, other shapes: a new graph, lowered again, and the same verdict
    assert _compile_error(torch.erfinv, torch.rand(3, 5, device="trnsim")) == (ReasonKind.LOWERING_TOOL_ERROR,
                                                                            "aten::erfinv")
    assert _children() > started


def test_blame_answers_from_earlier_probes(trnsim, lowering):
    def fn(t: torch.Tensor) -> torch.Tensor:
        return torch.erfinv(torch.sin(t) * 0.5)

    gm = make_fx(fn, tracing_mode="fake")(torch.rand(4))
    assert lowering.blame(gm) == "aten::erfinv"
    started = _children()
    assert lowering.blame(gm) == "aten::erfinv"
    assert _children() == started


def test_a_runaway_lowering_is_stopped_by_its_time_limit(lowering, runaway_importer, monkeypatch):
    import time

    runaway_importer("sleep_a_minute")
    monkeypatch.setattr(lowering, "TIMEOUT_S", 1.0)
    gm = make_fx(torch.sin, tracing_mode="fake")(torch.rand(4))
    lowering.lower(make_fx(torch.cos, tracing_mode="fake")(torch.rand(4)), name="forward")  # a server starts
    started = time.monotonic()
    result = lowering.lower(gm, name="forward")
    assert time.monotonic() - started < 30
    assert not result.ok and result.message.startswith("lowering aborted: did not finish within 1 s")
    # a timeout depends on the machine's load: the next attempt lowers again
    children = _children()
    assert not lowering.lower(gm, name="forward").ok
    assert _children() > children


def test_a_runaway_lowering_is_stopped_by_its_memory_limit(lowering, runaway_importer, monkeypatch):
    runaway_importer("hoard_memory")
    monkeypatch.setattr(lowering, "MEMORY_BYTES", 256 << 20)
    gm = make_fx(torch.cos, tracing_mode="fake")(torch.rand(4))
    result = lowering.lower(gm, name="forward")
    assert not result.ok and result.message.startswith("lowering aborted: MemoryError")
    # the process goes on lowering: the next graph gets a healthy server or child
    monkeypatch.undo()
    from sweeper.devices.trnsim import lowerserver

    lowerserver.shutdown()
    assert lowering.lower(make_fx(torch.tan, tracing_mode="fake")(torch.rand(4)), name="forward").ok


def test_graph_key_covers_constants_and_shapes(trnsim):
    from sweeper.devices.trnsim.graphkey import graph_key

    def scaled(values):
        return make_fx(lambda t: t * torch.tensor(values), tracing_mode="fake")(torch.rand(2))

    assert any(n.op == "get_attr" for n in scaled([1.0, 2.0]).graph.nodes)
    assert graph_key(scaled([1.0, 2.0]), "forward") == graph_key(scaled([1.0, 2.0]), "forward")
    assert graph_key(scaled([1.0, 2.0]), "forward") != graph_key(scaled([1.0, 3.0]), "forward")
    assert graph_key(scaled([1.0, 2.0]), "forward") != graph_key(scaled([1.0, 2.0]), "backward")
    wider = make_fx(lambda t: t * torch.tensor([1.0, 2.0]), tracing_mode="fake")(torch.rand(3, 2))
    assert graph_key(wider, "forward") != graph_key(scaled([1.0, 2.0]), "forward")
