"""Reference kernels for the fused LSTM/GRU cells PyTorch calls on accelerators.

``nn.LSTM``/``nn.GRU`` on a non-CPU device go through ``_thnn_fused_lstm_cell`` and
``_thnn_fused_gru_cell``; the CPU has no kernel for them, so the simulator supplies these
host implementations (same math and workspace layout as the CUDA kernels). The profile
decides whether reaching them is a recorded host fallback or an error.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch

import sweeper.devices.trnsim.kernels as kernels

Tensor = torch.Tensor


def lstm_cell(input_gates: Tensor, hidden_gates: Tensor, cx: Tensor, input_bias: Tensor | None = None,
              hidden_bias: Tensor | None = None) -> tuple[Tensor, Tensor, Tensor]:
    """Returns ``(hy, cy, workspace)``; the workspace holds the activated i, f, g, o gates."""
    gates = input_gates + hidden_gates
    if input_bias is not None:
        gates = gates + input_bias + hidden_bias
    i, f, g, o = gates.chunk(4, 1)
    i, f, g, o = i.sigmoid(), f.sigmoid(), g.tanh(), o.sigmoid()
    cy = f * cx + i * g
    hy = o * cy.tanh()
    return hy, cy, torch.cat([i, f, g, o], 1)


def lstm_cell_backward(grad_hy: Tensor | None, grad_cy: Tensor | None, cx: Tensor, cy: Tensor,
                       workspace: Tensor, has_bias: bool) -> tuple[Tensor, Tensor, Tensor | None]:
    """Returns ``(grad_gates, grad_cx, grad_bias)`` for ``lstm_cell``."""
    i, f, g, o = workspace.chunk(4, 1)
    go = grad_hy if grad_hy is not None else torch.zeros_like(cy)
    gc_in = grad_cy if grad_cy is not None else torch.zeros_like(cy)
    tanh_cy = cy.tanh()
    gcx = go * o * (1 - tanh_cy * tanh_cy) + gc_in
    grad_gates = torch.cat([gcx * g * (1 - i) * i, gcx * cx * (1 - f) * f, gcx * i * (1 - g * g),
                            go * tanh_cy * (1 - o) * o], 1)
    return grad_gates, gcx * f, grad_gates.sum(0) if has_bias else None


def gru_cell(input_gates: Tensor, hidden_gates: Tensor, hx: Tensor, input_bias: Tensor | None = None,
             hidden_bias: Tensor | None = None) -> tuple[Tensor, Tensor]:
    """Returns ``(hy, workspace)``; the workspace holds r, z, n, the hidden n-part and hx."""
    if input_bias is not None:
        input_gates = input_gates + input_bias
        hidden_gates = hidden_gates + hidden_bias
    ir, ii, in_ = input_gates.chunk(3, 1)
    hr, hi, hn = hidden_gates.chunk(3, 1)
    r = (ir + hr).sigmoid()
    z = (ii + hi).sigmoid()
    n = (in_ + r * hn).tanh()
    hy = n + z * (hx - n)
    return hy, torch.cat([r, z, n, hn, hx], 1)


def gru_cell_backward(grad_hy: Tensor, workspace: Tensor, has_bias: bool) -> tuple[Any, ...]:
    """Returns grads for (input_gates, hidden_gates, hx, input_bias, hidden_bias)."""
    r, z, n, hn, hx = workspace.chunk(5, 1)
    gz = grad_hy * (hx - n) * (1 - z) * z
    ghx = grad_hy * z
    gn = grad_hy * (1 - z) * (1 - n * n)
    gr = gn * hn * (1 - r) * r
    g_in = torch.cat([gr, gz, gn], 1)
    g_hid = torch.cat([gr, gz, gn * r], 1)
    if has_bias:
        return g_in, g_hid, ghx, g_in.sum(0), g_hid.sum(0)
    return g_in, g_hid, ghx, None, None


def as_kernel(fn: Callable[..., Any], name: str) -> Callable[..., Any]:
    """Wrap a reference function as a trnsim kernel that applies the profile to ``name``."""

    def kernel(*args: Any, **kwargs: Any) -> Any:
        policy = kernels.POLICY.get(name)
        if policy is not None:
            kernels.check_policy(name, policy)
        if kernels.state.STATE.recordings:
            kernels.state.note_op(name)
        return kernels.host_call(fn, name, *args, **kwargs)

    return kernel


def histc(self: torch.Tensor, bins: int = 100, min: float = 0, max: float = 0) -> torch.Tensor:
    """``histc`` for every dtype, as accelerators provide it: CPU's kernel takes floats only,
    and transformers' MoE routing calls it on integer expert ids when not on the CPU."""
    if self.is_floating_point():
        return torch.ops.aten.histc.default(self, bins, min, max)
    return torch.ops.aten.histc.default(self.double(), bins, min, max).to(self.dtype)


REFERENCE: dict[str, Callable[..., Any]] = {
    "aten::histc": histc,
    "aten::_thnn_fused_lstm_cell": lstm_cell,
    "aten::_thnn_fused_lstm_cell_backward_impl": lstm_cell_backward,
    "aten::_thnn_fused_gru_cell": gru_cell,
    "aten::_thnn_fused_gru_cell_backward": gru_cell_backward,
}
