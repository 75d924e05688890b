"""Kernels that cannot be the generic one: copies across devices, resize, set_, and the
accelerator-only entry points PyTorch calls for a PrivateUse1 device (convolution)."""

from __future__ import annotations

from typing import Any

import torch

import sweeper.devices.trnsim.kernels as kernels
import sweeper.devices.trnsim.state as state
import sweeper.devices.trnsim.storage as storage
from sweeper.devices.trnsim.errors import UnsupportedFeatureError

aten = torch.ops.aten
Tensor = torch.Tensor
_CPU_KEYS = torch._C.DispatchKeySet(torch._C.DispatchKey.CPU)


def _host(t: Tensor) -> Tensor:
    return t if t.is_cpu else storage.cpu_view(t)


def copy_from(self: Tensor, dst: Tensor, non_blocking: bool = False) -> Tensor:
    """``dst.copy_(self)`` where either side is trnsim: one host memcpy."""
    _count("aten::_copy_from")
    if not dst.is_cpu and dst.dtype not in kernels.ALLOWED_DTYPES:
        kernels.refuse_dtype("aten::_copy_from", dst.dtype)
    _host(dst).copy_(_host(self))
    return dst


def copy_from_and_resize(self: Tensor, dst: Tensor) -> Tensor:
    """Resize ``dst`` to ``self``'s shape, then copy."""
    _count("aten::_copy_from_and_resize")
    if dst.shape != self.shape:
        dst.resize_(self.shape)
    _host(dst).copy_(_host(self))
    return dst


def copy_from_math_bits(self: Tensor, dst: Tensor, non_blocking: bool = False) -> Tensor:
    """``_copy_from`` when either side is a lazy conjugate or negative view (``x.conj()``).

    PyTorch's math-bit fallback would resolve such an argument by cloning it, and the clone
    copies through ``_copy_from`` again, without end; for ``dst`` it would write into a
    clone and lose the copy. Registered on the Conjugate and Negative keys, this kernel
    does what a device copy engine does: one copy that applies the bits (the host views
    carry them), into ``dst`` itself.
    """
    return copy_from(self, dst, non_blocking)


def copy_from_and_resize_math_bits(self: Tensor, dst: Tensor) -> Tensor:
    """``_copy_from_and_resize`` with a conjugate or negative view on either side."""
    return copy_from_and_resize(self, dst)


def resize_(self: Tensor, size: Any, memory_format: Any = None) -> Tensor:
    """Grow into a fresh host allocation when needed, keeping the old contents."""
    _count("aten::resize_")
    numel = 1
    for s in size:
        numel *= int(s)
    need = (self.storage_offset() + numel) * self.element_size()
    if need > self.untyped_storage().nbytes():
        fresh = torch.empty(self.storage_offset() + numel, dtype=self.dtype)
        old = _host(self)
        if old.numel():
            fresh.view(-1)[self.storage_offset():self.storage_offset() + old.numel()].copy_(old.reshape(-1))
        storage.repoint(self, fresh)
    strides = torch.empty(size, device="meta").stride() if memory_format is None else \
        torch.empty(size, device="meta", memory_format=memory_format).stride()
    return aten.set_.source_Storage_storage_offset.redispatch(
        _CPU_KEYS, self, self.untyped_storage(), self.storage_offset(), list(size), strides)


def set_empty(self: Tensor) -> Tensor:
    """``t.set_()``: an empty trnsim storage."""
    return storage.repoint(self, torch.empty(0, dtype=self.dtype))


def set_storage(self: Tensor, source: Any) -> Tensor:
    """``t.set_(storage)``: view the whole storage as a flat tensor."""
    n = source.nbytes() // self.element_size()
    return aten.set_.source_Storage_storage_offset.redispatch(_CPU_KEYS, self, source, 0, [n], [1])


def convolution_overrideable(inp: Tensor, weight: Tensor, bias: Tensor | None, stride: Any, padding: Any,
                             dilation: Any, transposed: bool, output_padding: Any, groups: int) -> Tensor:
    """PyTorch routes convolutions on PrivateUse1 here; the host convolution computes it."""
    _count("aten::convolution_overrideable")
    inp, weight = _conv_math(inp, weight)
    return kernels.host_call(aten.convolution.default, "aten::convolution_overrideable",
                             inp, weight, bias, stride, padding, dilation, transposed, output_padding, groups)


def convolution_backward_overrideable(grad: Tensor, inp: Tensor, weight: Tensor, stride: Any, padding: Any,
                                      dilation: Any, transposed: bool, output_padding: Any, groups: int,
                                      output_mask: Any) -> Any:
    """Backward of ``convolution_overrideable`` through the host's ``convolution_backward``."""
    _count("aten::convolution_backward_overrideable")
    bias_sizes = [weight.size(1) * groups if transposed else weight.size(0)]
    grad, inp, weight = _conv_math(grad, inp, weight)
    return kernels.host_call(aten.convolution_backward.default, "aten::convolution_backward_overrideable",
                             grad, inp, weight, bias_sizes, stride, padding, dilation, transposed,
                             output_padding, groups, output_mask)


def _conv_math(*tensors: Tensor) -> list[Tensor]:
    """Convolution inputs as the profile's float32 math reads them: with a TF32 math, host
    copies rounded to its mantissa (the trnsim tensors untouched); else the tensors."""
    bits = kernels.ROUND_BITS.get("conv")
    if not bits:
        return list(tensors)
    return [kernels.round_mantissa(_host(t), bits) if t.dtype is torch.float32 else t for t in tensors]


def shallow_copy_compatible(self: Tensor, other: Tensor) -> bool:
    """``aten::_has_compatible_shallow_copy_type`` when a trnsim tensor is involved.

    ``Module.to()`` moves a parameter in place (keeping the Parameter, and so tied weights)
    only when this is True. PyTorch's own answer is False between CPU and PrivateUse1;
    vendor backends override it so dense host and device tensors are compatible. The
    registration is process-wide while profiles change per process, so the active profile
    decides at every call (``keeps_parameter_identity``).
    """
    if self.layout != torch.strided or other.layout != torch.strided:
        return self.device.type == other.device.type and self.layout == other.layout
    kinds = {self.device.type, other.device.type}
    if kinds == {"trnsim"}:
        return True
    return kinds == {"cpu", "trnsim"} and state.active_profile().allows("keeps_parameter_identity")


def metadata_only(op: Any) -> Any:
    """Kernel for an op whose CPU kernel only rewires sizes/strides/storage (``set_``)."""

    def kernel(*args: Any, **kwargs: Any) -> Any:
        return op.redispatch(_CPU_KEYS, *args, **kwargs)

    return kernel


def refuse_forward_ad(*args: Any, **kwargs: Any) -> Any:
    """``_make_dual`` on trnsim: forward-mode AD, which the chip lacks.

    Registered only while the profile refuses forward AD. There is no host fallback that
    keeps dual numbers alive, so even collect-all mode records the blocker and raises.
    """
    exc = UnsupportedFeatureError("forward-mode AD (make_dual / jvp) is not supported by trnsim",
                                  op="aten::_make_dual", feature="forward_ad")
    state.refuse(exc)
    raise exc


def refuse_layout(feature: str) -> Any:
    """A boxed fallback for the sparse / nested dispatch keys of the device."""

    def fallback(op: Any, *args: Any, **kwargs: Any) -> Any:
        name = f"aten::{op._schema.name.split('::')[-1]}" + ("" if op._overloadname == "default" else f".{op._overloadname}")
        raise UnsupportedFeatureError(f"{name}: trnsim has no {feature} tensors", op=name, feature=feature)

    return fallback


def _count(name: str) -> None:
    if state.STATE.recordings:
        state.note_op(name)
