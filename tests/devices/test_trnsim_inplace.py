"""In-place ops on trnsim (the path for ops that write their first argument alone): the
result is the argument itself, writes reach every view of the memory, autograd's version
counter moves, refusals and counting are the generic path's."""

from __future__ import annotations

import pytest
import torch

import sweeper.devices.trnsim as trnsim


def test_inplace_returns_the_argument_and_matches_cpu():
    a, b = torch.randn(4, 5), torch.randn(4, 5)
    ta, tb = a.to("trnsim"), b.to("trnsim")
    for cpu_call, trn_call in ((lambda: a.add_(b, alpha=2), lambda: ta.add_(tb, alpha=2)),
                               (lambda: a.mul_(3), lambda: ta.mul_(3)),
                               (lambda: a.clamp_(-0.5, 0.5), lambda: ta.clamp_(-0.5, 0.5)),
                               (lambda: a.abs_(), lambda: ta.abs_())):
        cpu_call()
        assert trn_call() is ta
    assert torch.equal(ta.cpu(), a)


def test_inplace_on_a_view_writes_the_base_and_bumps_the_version():
    base = torch.zeros(3, 4, device="trnsim")
    row = base[1]
    version = base._version
    row.fill_(2.0)
    row.add_(torch.ones(4, device="trnsim"))
    assert base._version > version
    expected = torch.zeros(3, 4)
    expected[1] = 3.0
    assert torch.equal(base.cpu(), expected)


def test_inplace_after_metadata_change_uses_the_new_memory():
    """``p.data = ...`` swaps a tensor's memory without a kernel seeing it: the next in-place
    op must write the new memory, not a cached view of the old one."""
    p = torch.zeros(4, device="trnsim")
    p.add_(1.0)  # caches a host view of the first memory
    p.data = torch.full((4,), 10.0, device="trnsim")
    p.add_(1.0)
    assert torch.equal(p.cpu(), torch.full((4,), 11.0))


def test_inplace_is_counted_and_refused_like_any_op():
    x = torch.ones(4, device="trnsim")
    with trnsim.recording() as rec:
        x.mul_(2)
        x.mul_(2)
    assert rec.ops["aten::mul_.Tensor"] == 2
    with trnsim.recording() as rec, trnsim.collect_all():
        y = torch.ones(4, dtype=torch.float64, device="trnsim")  # refused, then run on (collect-all)
        before = len(rec.errors)
        y.add_(1.0)
    assert len(rec.errors) == before + 1 and "float64" in rec.errors[-1]
    with pytest.raises(trnsim.UnsupportedDtypeError):
        torch.ones(4, device="trnsim").add_(torch.ones(4, dtype=torch.float64).to("trnsim"))
