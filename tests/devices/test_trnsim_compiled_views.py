"""A compiled graph's outputs alias on trnsim exactly as AOT autograd says they do.

jpwahle/longformer-base-plagiarism-detection failed compile on trnsim only: its attention
output, reshaped from a transposed tensor (``_unsafe_view`` of a copy), crossed a graph
break and was written in place by index (``attn_output[idx] = ...``). trnsim's compiler
decomposed ``_unsafe_view`` into ``view``, so the graph returned a view of an intermediate
that AOT had analysed as a fresh tensor: autograd saw a view made inside AOT's custom
Function and refused the write, and Dynamo reported it as a fake-tensor failure.
"""

from __future__ import annotations

import torch

from sweeper.devices.trnsim.decomps import compiler_decompositions


class Longformerish(torch.nn.Module):
    """Longformer's pattern: a transposed tensor reshaped (a copy), then, after a graph
    break, an index setitem on the result."""

    def __init__(self) -> None:
        super().__init__()
        self.linear = torch.nn.Linear(8, 8)

    def forward(self, x: torch.Tensor, rows: torch.Tensor, cols: torch.Tensor, value: torch.Tensor) -> torch.Tensor:
        heads = self.linear(x).view(2, 4, 4, 2).transpose(2, 3)  # (batch, seq, heads, dim), not contiguous
        out = heads.transpose(0, 1).reshape(4, 2, 8).contiguous()
        torch._dynamo.graph_break()  # longformer breaks on nonzero here
        out[rows, cols] = value
        return out


def _run(device: str, backend: str) -> tuple[torch.Tensor, torch.Tensor]:
    torch.manual_seed(0)
    model = Longformerish().to(device)
    args = (torch.randn(2, 4, 8), torch.tensor([0, 1]), torch.tensor([1, 0]), torch.ones(2, 8))
    args = tuple(a.to(device) for a in args)
    out = torch.compile(model, backend=backend)(*args)
    out.sum().backward()
    return out.detach().cpu(), model.linear.weight.grad.cpu()


def test_a_reshaped_output_written_in_place_after_a_graph_break_compiles_on_trnsim(trnsim):
    out, grad = _run("trnsim", "trnsim")
    want_out, want_grad = _run("cpu", "aot_eager")
    torch.testing.assert_close(out, want_out)
    torch.testing.assert_close(grad, want_grad)


def test_the_compiler_keeps_ops_whose_decomposition_would_alias(trnsim):
    table = compiler_decompositions(trnsim.load_profile(None))
    assert torch.ops.aten._unsafe_view.default not in table
    assert torch.ops.aten.addmm.default in table or torch.ops.aten.t.default in table  # the rest still decomposes
