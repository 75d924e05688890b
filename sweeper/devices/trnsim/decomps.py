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


def convolution_backward(grad_output: torch.Tensor, inp: torch.Tensor, weight: torch.Tensor, bias_sizes: Any,
                         stride: list[int], padding: list[int], dilation: list[int], transposed: bool,
                         output_padding: list[int], groups: int, output_mask: list[bool]) -> Any:
    """A 1-d ``convolution_backward`` as forward convolutions, the way XLA-style compilers
    express it (Torch-MLIR's own lowering of the op fails on 1-d convolutions, and on their
    2-d form when a stride needs output padding or there are groups). A 1-d transposed
    convolution's backward: as the 2-d op over a unit height. Other ranks are left to the
    op (``NotImplemented``): Torch-MLIR lowers the 2-d backward itself, and decomposing it
    inside AOT's joint trace aborted the process on EfficientNet (not understood yet)."""
    if inp.dim() != 3:
        return NotImplemented
    if transposed:
        return _convolution_backward_as_2d(grad_output, inp, weight, bias_sizes, stride, padding, dilation,
                                           transposed, output_padding, groups, output_mask)
    spatial = list(range(2, inp.dim()))
    grad_input = grad_weight = grad_bias = None
    if output_mask[0]:
        # Transposed convolution of the gradient; output padding restores the rows a
        # strided convolution dropped.
        extra = [inp.shape[d] - ((grad_output.shape[d] - 1) * stride[i] - 2 * padding[i] +
                                 dilation[i] * (weight.shape[d] - 1) + 1) for i, d in enumerate(spatial)]
        grad_input = aten.convolution.default(grad_output, weight, None, stride, padding, dilation, True, extra,
                                              groups)
    if output_mask[1]:
        grad_weight = _weight_gradient(grad_output, inp, weight, stride, padding, dilation, groups)
    if output_mask[2]:
        grad_bias = grad_output.sum(dim=[0, *spatial])
    return grad_input, grad_weight, grad_bias


def _weight_gradient(grad_output: torch.Tensor, inp: torch.Tensor, weight: torch.Tensor, stride: list[int],
                     padding: list[int], dilation: list[int], groups: int) -> torch.Tensor:
    """Correlate input and gradient over the batch: batch and channels swap roles (per
    group), stride and dilation swap too; the result can overhang the kernel by < stride."""
    n, g = inp.shape[0], groups
    c_in, c_out = inp.shape[1] // g, grad_output.shape[1] // g
    rest_in, rest_out = list(inp.shape[2:]), list(grad_output.shape[2:])
    order = [2, 1, 0, *range(3, inp.dim() + 1)]
    # (N, G*Ci, ...) -> (Ci, G*N, ...) and (N, G*Co, ...) -> (G*Co, N, ...)
    lhs = inp.reshape(n, g, c_in, *rest_in).permute(order).reshape(c_in, g * n, *rest_in)
    rhs = grad_output.reshape(n, g, c_out, *rest_out).permute([1, 2, 0, *range(3, inp.dim() + 1)])
    rhs = rhs.reshape(g * c_out, n, *rest_out)
    grad = aten.convolution.default(lhs, rhs, None, dilation, padding, stride, False, [0] * len(stride), g)
    grad = grad.transpose(0, 1)  # (G*Co, Ci, ...)
    for d in range(2, inp.dim()):
        grad = grad.narrow(d, 0, weight.shape[d])
    return grad


def _convolution_backward_as_2d(grad_output: torch.Tensor, inp: torch.Tensor, weight: torch.Tensor,
                                bias_sizes: Any, stride: list[int], padding: list[int], dilation: list[int],
                                transposed: bool, output_padding: list[int], groups: int,
                                output_mask: list[bool]) -> Any:
    """A 1-d ``convolution_backward`` as the 2-d op over a unit height."""
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
    aten.convolution_backward.default: convolution_backward,
}


# Decompositions that turn an op that does not alias into one that does. AOT autograd
# decides which graph outputs alias what before it decomposes, and the graph runs as traced:
# ``_unsafe_view`` (what ``reshape`` of a non-contiguous tensor becomes) decomposed to
# ``view`` made a graph output a view of an intermediate that AOT returns from inside its
# autograd Function, so an in-place write to it after a graph break was refused ("a view
# created inside a custom Function": longformer's global-attention setitem). A compiler
# that hands back fresh buffers never shows this; ours runs the graph as traced, so the op
# stays whole (Torch-MLIR lowers it).
ALIAS_CHANGING = frozenset({aten._unsafe_view.default})


def compiler_decompositions(profile: Profile) -> dict[Any, Callable[..., Any]]:
    """Core ATen + Torch-MLIR's table + ``EXTRA``, minus every op the profile does not
    compile natively (those stay whole, to be refused by name) and minus decompositions
    that would make a non-aliasing output a view (``ALIAS_CHANGING``)."""
    table = {**decomposition_table(), **EXTRA}
    return {op: fn for op, fn in table.items()
            if isinstance(op, torch._ops.OpOverload) and op not in ALIAS_CHANGING
            and profile.policy(op_name(op), "compile") == "native"}
