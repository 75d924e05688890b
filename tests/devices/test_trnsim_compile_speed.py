"""What makes trnsim's compile stage cheaper must not change what it compiles or leave state
behind: graphs lowered with AOT's logging off are the graphs lowered with it on, prepared
graphs still have their code when asked, the GC pause restores the thresholds, and the
device's warm-up leaves no trace a model could see."""

from __future__ import annotations

import gc

import pytest
import torch
from trnsim_helpers import run_compiled

pytest.importorskip("torch_mlir")


def _lowered(fn, x) -> list[tuple[str, str]]:
    from sweeper.devices.trnsim import compiler, lowering

    compiler.reset_lowered()
    lowering.clear_cache()
    torch._dynamo.reset()
    run_compiled(fn, x)
    return list(compiler.LOWERED)


def _mlp(x: torch.Tensor) -> torch.Tensor:
    return torch.nn.functional.gelu(x @ x.T).softmax(-1).sum(0)


def test_quiet_aot_lowers_the_same_graphs_as_logging_aot(trnsim, monkeypatch):
    from sweeper.devices.trnsim import aotlog

    x = torch.rand(4, 4, device="trnsim", requires_grad=True)
    quiet = _lowered(_mlp, x)
    monkeypatch.setattr(aotlog, "logs_wanted", lambda: True)  # AOT as torch ships it
    logged = _lowered(_mlp, x)
    assert [kind for kind, _ in quiet] == ["forward", "backward"]
    assert quiet == logged


def test_quiet_aot_leaves_torch_as_it_found_it(trnsim):
    import torch._functorch.aot_autograd as aot

    from sweeper.devices.trnsim import aotlog

    before = aot.AOTConfig
    with pytest.raises(RuntimeError), aotlog.quiet():
        assert aot.AOTConfig is not before
        assert not aot.AOTConfig.__dataclass_fields__["enable_log"].default
        raise RuntimeError("a compile error")
    assert aot.AOTConfig is before


def test_compile_logs_asked_for_are_kept(monkeypatch):
    from sweeper.devices.trnsim import aotlog

    monkeypatch.setenv("TORCH_LOGS", "aot_graphs")
    assert aotlog.logs_wanted()


def test_a_prepared_graph_still_has_its_code(trnsim):
    from torch.fx.experimental.proxy_tensor import make_fx

    from sweeper.devices.trnsim import lowering

    gm = make_fx(lambda a: ((a.sin() + 1).relu(),), tracing_mode="fake")(torch.rand(3))
    prepared = lowering.prepare(gm)
    assert "torch.ops.aten.sin.default" in prepared.code
    torch.testing.assert_close(prepared(torch.ones(3))[0], (torch.ones(3).sin() + 1).relu())


def test_collections_resume_after_the_pause():
    from sweeper.checks.gcpause import fewer_collections

    before = gc.get_threshold()
    with pytest.raises(ValueError), fewer_collections():
        paused = gc.get_threshold()
        assert paused[0] > before[0] and paused[2] > before[2]
        assert paused[1] == before[1]
        raise ValueError("a model's compile error")
    assert gc.get_threshold() == before


def test_warm_up_compiles_once_and_leaves_no_trace(trnsim):
    from torch._dynamo.utils import counters

    from sweeper.devices.base import get_device
    from sweeper.devices.trnsim import compiler, lowering, phases

    device = get_device("trnsim")
    rng = torch.get_rng_state()
    aot_before = phases.snapshot().get("aot", phases.PhaseTime()).count
    device.warm_up()
    assert phases.snapshot()["aot"].count > aot_before  # it did compile
    assert torch.equal(torch.get_rng_state(), rng)
    assert compiler.LOWERED == [] and len(lowering._RESULTS) == 0
    assert not counters["graph_break"] and not counters["aot_autograd"]
