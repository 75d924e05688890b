"""The forked lowering child runs torch ops even when its parent ran them on several threads."""

from __future__ import annotations

import torch

from sweeper.devices.trnsim.isolate import run_isolated


def test_a_child_forked_from_a_multithreaded_parent_does_not_hang():
    """``sweep one`` (threads as torch chooses) had every lowering of longformer time out:
    the child's first parallel op waited at an OpenMP barrier for the parent's threads,
    which a fork does not copy, and the record blamed host-side lowering time."""
    before = torch.get_num_threads()
    torch.set_num_threads(2)
    try:
        torch.full((1 << 22,), 1.0).sum()  # the parent's OpenMP team now exists
        total = run_isolated(lambda: float(torch.full((1 << 22,), 1.0).sum()), timeout=20, extra_memory=1 << 30)
    finally:
        torch.set_num_threads(before)
    assert total == float(1 << 22)
