"""Glue that makes generic PyTorch paths work for a Python-defined device: serialization,
printing, storage clones (deepcopy) and the jagged-NestedTensor guard. Each install is
idempotent and changes behaviour for trnsim tensors only."""

from __future__ import annotations

from typing import Any

import torch

import sweeper.devices.trnsim.storage as storage

_INSTALLED: dict[str, Any] = {}


def _tag(obj: Any) -> str | None:
    if getattr(obj, "device", None) is not None and obj.device.type == "trnsim":
        return "trnsim"
    return None


def _restore(obj: Any, location: str) -> Any:
    if not location.startswith("trnsim"):
        return None
    # ``obj`` is a freshly read CPU storage: the trnsim storage can simply view it.
    untyped = obj._untyped_storage if isinstance(obj, torch.storage.TypedStorage) else obj
    return storage.trn_storage_for(untyped)


def install_serialization() -> None:
    """``torch.save`` tags trnsim storages; ``torch.load`` restores them without a copy."""
    if "serialization" in _INSTALLED:
        return
    torch.serialization.register_package(15, _tag, _restore)
    _INSTALLED["serialization"] = True


def install_printing() -> None:
    """Print trnsim tensors from a host copy.

    PyTorch formats a tensor by computing on its device in float64, which the chip does
    not have; like XLA's tensors, trnsim formats the host copy and keeps its device suffix.
    """
    if "printing" in _INSTALLED:
        return
    import torch._tensor_str as ts

    original = ts._str
    _INSTALLED["printing"] = original

    def _str(self: torch.Tensor, *, tensor_contents: Any = None) -> str:
        # Plain tensors only: fake/functional wrappers print without reading data.
        if tensor_contents is None and type(self) in (torch.Tensor, torch.nn.Parameter) \
                and self.device.type == "trnsim" and self.numel() and self.layout == torch.strided:
            with torch.no_grad():
                host = self.detach().to("cpu")
            tensor_contents = ts._tensor_str(host, len("tensor("))
        return original(self, tensor_contents=tensor_contents)

    ts._str = _str


def install_nested_guard() -> None:
    """Refuse jagged NestedTensors over trnsim values when the profile turns nested off.

    A jagged NestedTensor is a Python subclass whose ops reach the device as dense ops, so
    the dispatch-key guard that catches strided NestedTensors never sees it: check at birth.
    """
    if "nested" in _INSTALLED:
        return
    from torch.nested._internal.nested_tensor import NestedTensor

    original = NestedTensor.__init__
    _INSTALLED["nested"] = original

    def __init__(self: Any, values: torch.Tensor, offsets: torch.Tensor, *args: Any, **kwargs: Any) -> None:
        if values.device.type == "trnsim":
            import sweeper.devices.trnsim.state as state
            from sweeper.devices.trnsim.errors import UnsupportedFeatureError

            if not state.active_profile().allows("nested"):
                state.refuse(UnsupportedFeatureError("trnsim has no nested (jagged) tensors",
                                                     op="aten::_nested_from_jagged", feature="nested"))
        original(self, values, offsets, *args, **kwargs)

    NestedTensor.__init__ = __init__


def install_storage_clone() -> None:
    """``storage.clone()`` (and so ``copy.deepcopy`` of tensors and modules) for trnsim.

    PyTorch clones a storage by allocating a new one with the device's C++ allocator; a
    Python backend has none (the call would crash), so trnsim clones the host owner and
    views the copy.
    """
    if "clone" in _INSTALLED:
        return
    original = torch.storage._StorageBase.clone
    _INSTALLED["clone"] = original

    def clone(self: Any) -> Any:
        if self.device.type != "trnsim":
            return original(self)
        host = torch.UntypedStorage(self.nbytes())
        if self.nbytes():
            host.copy_(storage.owner_of(self))
        return storage.trn_storage_for(host)

    clone.__doc__ = original.__doc__
    torch.storage._StorageBase.clone = clone
