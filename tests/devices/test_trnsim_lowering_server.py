"""Graphs are lowered in one long-lived server per process, not a child forked per graph:
what reaches it lowers exactly as the graph itself does, what cannot travel is lowered in a
forked child as before, and a server that dies costs one verdict (host-side), not the next."""

from __future__ import annotations

import os
import pickle
from pathlib import Path

import pytest
import torch
from torch.fx.experimental.proxy_tensor import make_fx
from trnsim_helpers import run_compiled

pytest.importorskip("torch_mlir")


def _graphs() -> dict[str, torch.fx.GraphModule]:
    """Prepared graphs with what the wire must carry: constants, several outputs (getitem),
    views with an offset, integer and boolean values, a failing op."""
    from sweeper.devices.trnsim.lowering import prepare

    def constant(t):
        return t * torch.tensor([1.0, 2.0, 3.0]) + 1

    def several(t):
        values, indices = torch.topk(t, 2, dim=-1)
        return values.sum(), indices, (t > 0).any()

    def views(t):
        return t[1:, 2:].transpose(0, 1).contiguous() @ t[:3, :2]

    graphs = {
        "constant": make_fx(constant, tracing_mode="fake")(torch.rand(4, 3)),
        "several": make_fx(several, tracing_mode="fake")(torch.rand(4, 5)),
        "views": make_fx(views, tracing_mode="fake")(torch.rand(4, 5)),
        "erfinv": make_fx(torch.erfinv, tracing_mode="fake")(torch.rand(4)),
    }
    return {name: prepare(gm) for name, gm in graphs.items()}


def test_a_wired_graph_lowers_to_the_same_stablehlo_as_the_graph(lowering):
    from sweeper.devices.trnsim import graphwire

    for name, gm in _graphs().items():
        data = graphwire.encode(gm)
        assert data is not None, name
        assert lowering._import(graphwire.decode(data), "forward")[0] == lowering._import(gm, "forward")[0], name


def test_what_cannot_travel_is_lowered_in_a_forked_child(lowering, monkeypatch):
    from sweeper.devices.trnsim import graphwire, isolate

    strided = lowering.prepare(make_fx(lambda t: t.as_strided((2, 2), (1, 2), 1), tracing_mode="fake")(torch.rand(6)))
    assert graphwire.encode(strided) is None  # the importer reads the storage a view shares
    forked = []
    real = isolate.run_isolated
    monkeypatch.setattr(lowering, "run_isolated", lambda fn, **kw: forked.append(1) or real(fn, **kw))
    assert lowering.lower(strided, name="forward").ok
    assert forked
    forked.clear()
    assert lowering.lower(lowering.prepare(make_fx(torch.sin, tracing_mode="fake")(torch.rand(4))), name="forward").ok
    assert not forked  # a graph that travels goes to the server


def test_a_model_compiled_on_trnsim_lowers_in_the_server_without_forking(trnsim, lowering, monkeypatch):
    from sweeper.devices.trnsim import lowerserver

    def no_fork(fn, **kw):
        raise AssertionError("a lowering was forked")

    monkeypatch.setattr(lowering, "run_isolated", no_fork)
    model = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.GELU(), torch.nn.Linear(8, 2)).to("trnsim")
    torch._dynamo.reset()
    out = torch.compile(model, backend="trnsim")(torch.rand(3, 4, device="trnsim"))
    out.sum().backward()
    assert lowerserver._STATE["server"] is not None and lowerserver._STATE["server"].process.poll() is None
    x = torch.rand(4, device="trnsim") - 0.5
    torch._dynamo.reset()
    with pytest.raises(Exception, match="aten::erfinv"):  # blamed by probes the server judged
        run_compiled(torch.erfinv, x)


def test_a_server_that_dies_costs_one_host_side_verdict(lowering, monkeypatch):
    import lowering_runaways

    from sweeper.devices.trnsim import lowerserver

    lowerserver.shutdown()
    here = str(Path(lowering_runaways.__file__).parent)
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([here, os.environ.get("PYTHONPATH", "")]))
    monkeypatch.setenv("TRNSIM_LOWERING_SERVER_IMPORTER", "lowering_runaways:die")
    try:
        result = lowering.lower(make_fx(torch.sin, tracing_mode="fake")(torch.rand(4)), name="forward")
        assert not result.ok and result.message == "lowering aborted: ran out of memory or crashed"
        assert result.op is None  # the host's, no op is blamed
    finally:
        monkeypatch.undo()
        lowerserver.shutdown()
    assert lowering.lower(make_fx(torch.cos, tracing_mode="fake")(torch.rand(4)), name="forward").ok


def test_a_librarys_custom_op_is_lowered_where_the_library_is_imported(lowering, monkeypatch):
    """transformers' MoE layers call ``transformers::grouped_mm_fallback``, an op that exists
    only in a process that imported transformers: the server (a fresh interpreter) could not
    rebuild such a graph, and that must never become a verdict."""
    from sweeper.devices.trnsim import graphwire, isolate, lowerserver

    @torch.library.custom_op("sweepertest::twice", mutates_args=())
    def twice(t: torch.Tensor) -> torch.Tensor:
        return t * 2

    twice.register_fake(lambda t: torch.empty_like(t))
    gm = lowering.prepare(make_fx(lambda t: twice(t).sin(), tracing_mode="fake")(torch.rand(4)))
    assert graphwire.encode(gm) is None
    forked = []
    real = isolate.run_isolated
    monkeypatch.setattr(lowering, "run_isolated", lambda fn, **kw: forked.append(1) or real(fn, **kw))
    result = lowering.lower(gm, name="forward")
    assert forked and not result.ok and result.op == "sweepertest::twice"
    assert not result.message.startswith("lowering aborted")
    # bytes the server cannot rebuild: the caller is told to lower the graph itself, the server lives on
    lowering.lower(lowering.prepare(make_fx(torch.sin, tracing_mode="fake")(torch.rand(4))), name="forward")
    server = lowerserver._STATE["server"]
    bad = [("placeholder", "x", "x", (), {}, graphwire._ABSENT, {}, None),
           ("call_function", "y", ("op", "sweepertest_gone", "twice", "default"), (graphwire._NodeRef("x"),), {},
            graphwire._ABSENT, {}, None)]
    with pytest.raises(RuntimeError, match="could not rebuild"):
        lowerserver.lower(pickle.dumps(bad), "forward", timeout=60, extra_memory=1 << 30)
    assert lowerserver._STATE["server"] is server and server.process.poll() is None
