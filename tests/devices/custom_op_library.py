"""A library's custom op, as transformers registers ``transformers::grouped_mm_fallback``:
defined with ``torch.library.custom_op`` in a module a reproducer has to import."""

from __future__ import annotations

import torch


@torch.library.custom_op("sweeperlib::scaled_tanh", mutates_args=())
def scaled_tanh(x: torch.Tensor, scale: float) -> torch.Tensor:
    """``tanh(x) * scale`` as one op the lowering tool has never heard of."""
    return torch.tanh(x) * scale


@scaled_tanh.register_fake
def _(x: torch.Tensor, scale: float) -> torch.Tensor:
    return torch.empty_like(x)


def _backward(ctx, grad):  # noqa: ANN001 - autograd's signature
    (x,) = ctx.saved_tensors
    return grad * ctx.scale * (1 - torch.tanh(x) ** 2), None


def _setup(ctx, inputs, output):  # noqa: ANN001
    ctx.save_for_backward(inputs[0])
    ctx.scale = inputs[1]


scaled_tanh.register_autograd(_backward, setup_context=_setup)


class UsesCustomOp(torch.nn.Module):
    """A linear layer, then the custom op: the op reaches the compiled graph as itself."""

    def __init__(self) -> None:
        super().__init__()
        self.linear = torch.nn.Linear(8, 8)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return scaled_tanh(self.linear(x), 2.0)
