"""The decompositions the trnsim compiler applies before it judges an op.

A vendor compiler decomposes what it has no direct lowering for into ops it has: core
ATen's table, the lowering tool's own table (Torch-MLIR's StableHLO path), and a few
backward ops neither covers. An op the profile refuses is never decomposed, so it stays in
the graph under its own name and is refused as the chip's gap.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch

from sweeper.devices.trnsim.lowering import decomposition_table, op_name
from sweeper.devices.trnsim.profile import Profile

aten = torch.ops.aten


def weight_norm_interface_backward(grad_w: torch.Tensor, saved_v: torch.Tensor, saved_g: torch.Tensor,
                                   saved_norms: torch.Tensor, dim: int) -> tuple[torch.Tensor, torch.Tensor]:
    """``_weight_norm_interface_backward`` in elementwise ops and sums (PyTorch's own
    formula, WeightNorm.cpp ``_weight_norm_differentiable_backward``): with ``w = g * v /
    |v|`` (norms over every dim but ``dim``), ``grad_g = sum(grad_w * v) / |v|`` and
    ``grad_v = g / |v| * (grad_w - v * sum(grad_w * v) / |v|^2)``."""
    dim = dim + saved_v.dim() if dim < 0 else dim
    others = [d for d in range(saved_v.dim()) if d != dim]
    per_dir = torch.sum(grad_w * saved_v, dim=others, keepdim=True)
    grad_v = (saved_g / saved_norms) * (grad_w - saved_v * (per_dir / (saved_norms * saved_norms)))
    grad_g = per_dir / saved_norms
    return grad_v, grad_g


def convolution_backward_1d(grad_output: torch.Tensor, inp: torch.Tensor, weight: torch.Tensor, bias_sizes: Any,
                            stride: list[int], padding: list[int], dilation: list[int], transposed: bool,
                            output_padding: list[int], groups: int, output_mask: list[bool]) -> Any:
    """A 1-d ``convolution_backward`` as the 2-d one over a unit height (how compilers
    treat 1-d convolutions; Torch-MLIR lowers only the 2-d backward). Other ranks are left
    to the op itself (``NotImplemented``)."""
    if inp.dim() != 3:
        return NotImplemented
    grads = aten.convolution_backward.default(
        grad_output.unsqueeze(2), inp.unsqueeze(2), weight.unsqueeze(2), bias_sizes, [1, *stride], [0, *padding],
        [1, *dilation], transposed, [0, *output_padding], groups, output_mask)
    grad_input, grad_weight, grad_bias = grads
    return (grad_input.squeeze(2) if grad_input is not None else None,
            grad_weight.squeeze(2) if grad_weight is not None else None, grad_bias)


# Backward ops with a host kernel but no decomposition in core ATen or Torch-MLIR.
EXTRA: dict[Any, Callable[..., Any]] = {
    aten._weight_norm_interface_backward.default: weight_norm_interface_backward,
    aten.convolution_backward.default: convolution_backward_1d,
}


def compiler_decompositions(profile: Profile) -> dict[Any, Callable[..., Any]]:
    """Core ATen + Torch-MLIR's table + ``EXTRA``, minus every op the profile does not
    compile natively (those stay whole, to be refused by name)."""
    table = {**decomposition_table(), **EXTRA}
    return {op: fn for op, fn in table.items()
            if isinstance(op, torch._ops.OpOverload) and profile.policy(op_name(op), "compile") == "native"}
