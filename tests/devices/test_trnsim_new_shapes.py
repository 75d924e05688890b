"""trnsim's recompiles at new shapes: a graph that differs from a checked one only in its
sizes skips the checks again inside ``new_shapes()`` alone, and never across dtypes."""

from __future__ import annotations

import torch

from sweeper.devices.trnsim import compiler, phases


def _aot_runs(fn, *inputs: torch.Tensor) -> int:
    """How many graphs went through AOT autograd (the full checks) for these calls."""
    before = phases.snapshot().get("aot")
    for x in inputs:
        fn(x)
    after = phases.snapshot().get("aot")
    return (after.count if after else 0) - (before.count if before else 0)


def _fresh():
    import torch._dynamo

    torch._dynamo.reset()
    compiler.reset_lowered()
    return torch.compile(lambda x: torch.nn.functional.gelu(x) * 2 + 1, backend="trnsim")


def test_a_new_size_is_checked_again_outside_the_shapes_stage(trnsim):
    fn = _fresh()
    with torch.no_grad():
        assert _aot_runs(fn, torch.randn(2, 8, device="trnsim"), torch.randn(3, 8, device="trnsim")) == 2


def test_within_new_shapes_a_graph_that_differs_only_in_its_sizes_runs_as_traced(trnsim):
    fn = _fresh()
    with torch.no_grad():
        assert _aot_runs(fn, torch.randn(2, 8, device="trnsim")) == 1
        with compiler.new_shapes():
            x = torch.randn(3, 8, device="trnsim")
            assert _aot_runs(fn, x) == 0
            torch.testing.assert_close(fn(x).cpu(), torch.nn.functional.gelu(x.cpu()) * 2 + 1)
            # Another dtype is another graph to its checks: checked in full.
            assert _aot_runs(fn, torch.randn(3, 8, device="trnsim", dtype=torch.bfloat16)) == 1
