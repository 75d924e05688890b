"""The forked child that lowers a graph runs torch ops of its own (Torch-MLIR's as_strided
rewrite builds index tensors); after the parent used its intra-op thread pool, such an op
in the child once waited forever on a pool that did not survive the fork."""

from __future__ import annotations

import torch

from sweeper.devices.trnsim.isolate import run_isolated


def test_a_parallel_torch_op_in_the_forked_child_finishes():
    threads = torch.get_num_threads()
    torch.set_num_threads(2)
    try:
        (torch.arange(10**7) * 2).sum()  # the parent's pool is up before the fork
        result = run_isolated(lambda: int((torch.arange(10**7) * 2).sum()), timeout=60, extra_memory=1 << 30)
    finally:
        torch.set_num_threads(threads)
    assert result == 10**7 * (10**7 - 1)
