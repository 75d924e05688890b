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


def _lowered_kinds() -> list[tuple[str, str]]:
    from sweeper.devices.trnsim import compiler

    return list(compiler.LOWERED)


def test_a_verdict_lowered_by_one_worker_answers_another_through_the_shared_folder(trnsim, lowering, tmp_path):
    from sweeper.devices.trnsim import compiler, lowercache

    lowercache.configure(tmp_path / "verdicts", salt="tool|torch|profile")
    x = torch.rand(4, device="trnsim") - 0.5
    first = _compile_error(torch.erfinv, x)
    compiler.reset_lowered()
    out = run_compiled(torch.sin, x)
    passed = _lowered_kinds()
    assert passed and all("stablehlo." in text for _, text in passed)
    # Another worker: nothing kept in its process, the same folder.
    lowering.clear_cache()
    compiler.reset_lowered()
    torch._dynamo.reset()
    started = _children()
    with trnsim.recording() as rec:
        again = _compile_error(torch.erfinv, x)
    torch._dynamo.reset()
    torch.testing.assert_close(run_compiled(torch.sin, x).cpu(), out.cpu())
    assert first == again == (ReasonKind.LOWERING_TOOL_ERROR, "aten::erfinv")
    assert any("aten::erfinv" in p for p in rec.compile_problems)
    assert _lowered_kinds() == passed  # the same StableHLO, read back from the folder
    assert _children() == started  # neither graph was lowered again


def test_a_shared_verdict_answers_only_the_same_tool_torch_and_profile(trnsim, lowering, tmp_path):
    from sweeper.devices.trnsim import lowercache

    gm = make_fx(torch.erfinv, tracing_mode="fake")(torch.rand(4))
    lowercache.configure(tmp_path, salt="torch-mlir 1|torch 2.13|profile a")
    assert lowering.lower(gm, name="forward").op == "aten::erfinv"
    lowering.clear_cache()
    lowercache.configure(tmp_path, salt="torch-mlir 2|torch 2.13|profile a")  # a new lowering tool
    started = _children()
    assert lowering.lower(gm, name="forward").op == "aten::erfinv"
    assert _children() > started


def test_an_unreadable_shared_entry_is_lowered_again(trnsim, lowering, tmp_path):
    from sweeper.devices.trnsim import lowercache

    lowercache.configure(tmp_path, salt="s")
    gm = make_fx(torch.sin, tracing_mode="fake")(torch.rand(4))
    assert lowering.lower(gm, name="forward").ok
    (entry,) = tmp_path.glob("*/*.json")
    entry.write_text("{not json", encoding="utf-8")  # a disk that filled up mid-write elsewhere
    lowering.clear_cache()
    started = _children()
    assert lowering.lower(gm, name="forward").ok
    assert _children() > started


def test_a_sweep_shares_verdicts_in_its_folder_and_with_cache_across_sweeps(trnsim, tmp_path):
    from sweeper.devices.spec import resolve_device
    from sweeper.devices.trnsim import lowercache
    from sweeper.settings.config import SweepConfig

    cfg = SweepConfig.of(device="trnsim")
    spec, _ = resolve_device(cfg, out_dir=str(tmp_path / "out"))
    assert spec.shared_cache == str(tmp_path / "out" / ".compiler-verdicts")
    spec.build().setup()  # what a worker does
    assert lowercache.folder() == tmp_path / "out" / ".compiler-verdicts"
    cached = SweepConfig.of(device="trnsim", cache=str(tmp_path / "cache"))
    spec, _ = resolve_device(cached, out_dir=str(tmp_path / "out"))
    assert spec.shared_cache == str(tmp_path / "cache" / "compiler-verdicts")
