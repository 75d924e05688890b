"""Autocast for trnsim: lower-precision matmuls and convolutions, fp32 for sensitive ops.

PyTorch registers no autocast kernels for PrivateUse1, so without these ``torch.autocast
("trnsim")`` would be a silent no-op. The lists follow CUDA's policy, reduced to the ops
models use.
"""

from __future__ import annotations

from typing import Any

import torch

aten = torch.ops.aten
_KEY = torch._C.DispatchKey.AutocastPrivateUse1
_EXCLUDE = torch._C.DispatchKeySet(_KEY)

LOWER_PRECISION = ("mm", "addmm", "bmm", "baddbmm", "addbmm", "matmul", "linear", "conv1d", "conv2d",
                   "conv3d", "conv_transpose1d", "conv_transpose2d", "_convolution", "convolution",
                   "prelu", "addmv", "addr", "chain_matmul", "_scaled_dot_product_flash_attention_for_cpu",
                   "scaled_dot_product_attention")
FP32 = ("softmax", "log_softmax", "layer_norm", "native_layer_norm", "group_norm", "nll_loss",
        "cross_entropy_loss", "mse_loss", "binary_cross_entropy_with_logits", "exp", "log", "pow",
        "cumsum", "sum", "prod", "norm", "rsqrt", "erfinv", "acos", "asin", "cosh", "sinh", "tan")


def _cast(value: Any, dtype: torch.dtype) -> Any:
    if isinstance(value, torch.Tensor):
        if value.is_floating_point() and value.device.type == "trnsim" and value.dtype != dtype:
            return value.to(dtype)
        return value
    if isinstance(value, (list, tuple)):
        return type(value)(_cast(v, dtype) for v in value)
    return value


def _kernel(op: torch._ops.OpOverload, fp32: bool) -> Any:
    def kernel(*args: Any, **kwargs: Any) -> Any:
        dtype = torch.float32 if fp32 else torch.get_autocast_dtype("trnsim")
        with torch._C._ExcludeDispatchKeyGuard(_EXCLUDE):
            return op(*_cast(args, dtype), **{k: _cast(v, dtype) for k, v in kwargs.items()})

    return kernel


def register(lib: torch.library.Library) -> None:
    """Install a fallthrough for every op, and casting kernels for the listed ones."""
    anylib = torch.library.Library("_", "IMPL")
    anylib.fallback(torch.library.fallthrough_kernel, dispatch_key="AutocastPrivateUse1")
    _KEEP.append(anylib)
    for names, fp32 in ((LOWER_PRECISION, False), (FP32, True)):
        for name in names:
            packet = getattr(aten, name, None)
            if packet is None:
                continue
            for overload in packet.overloads():
                if "out" in overload:
                    continue  # out= variants keep the caller's dtype
                lib.impl(getattr(packet, overload), _kernel(getattr(packet, overload), fp32), "AutocastPrivateUse1")


_KEEP: list[torch.library.Library] = []
