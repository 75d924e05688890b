"""Zero-copy storage: trnsim tensors are views of CPU memory.

Every trnsim storage is a non-owning storage over the data of a CPU storage (the owner).
A side table, keyed by data pointer, keeps the owner alive until the trnsim storage dies
(a weakref callback; PyTorch preserves a storage's Python object while C++ holds it, so
the callback fires only when the last tensor using it is gone). ``cpu_view`` and ``wrap``
move between the two worlds without copying.
"""

from __future__ import annotations

import weakref
from typing import Any

import torch

CPU = torch.device("cpu")
# The CPU set_ kernel only rewires metadata, so it serves trnsim tensors as well; calling
# it by redispatch skips a round trip through the Python kernel.
_SET = torch.ops.aten.set_.source_Storage_storage_offset
_CPU_KEYS = torch._C.DispatchKeySet(torch._C.DispatchKey.CPU)
_new_storage = torch._C._construct_storage_from_data_pointer
_new_tensor = torch._C._acc.create_empty_tensor


class _Entry:
    """One live allocation: the owning CPU storage and a weak reference to its trnsim twin."""

    __slots__ = ("flat", "nbytes", "owner", "trn")

    def __init__(self, owner: torch.UntypedStorage, trn: Any, nbytes: int) -> None:
        self.owner = owner
        self.trn = trn
        self.nbytes = nbytes
        # One flat CPU tensor per dtype over the whole allocation: a CPU view of any
        # trnsim tensor is then a single as_strided call.
        self.flat: dict[torch.dtype, torch.Tensor] = {}


_TABLE: dict[int, _Entry] = {}
_DEVICE: list[torch.device] = []
STATS = {"allocated": 0, "peak": 0, "allocations": 0}


def device() -> torch.device:
    """``trnsim:0`` (built lazily: the name exists only after the backend is renamed)."""
    if not _DEVICE:
        _DEVICE.append(torch.device("trnsim", 0))
    return _DEVICE[0]


def _release(ref: Any) -> None:
    # The trnsim storage died: drop the owner unless the pointer was reused meanwhile.
    ptr = ref.ptr
    entry = _TABLE.get(ptr)
    if entry is not None and entry.trn is ref:
        del _TABLE[ptr]
        STATS["allocated"] -= entry.nbytes


class _Ref(weakref.ref):
    __slots__ = ("ptr",)


def trn_storage_for(owner: torch.UntypedStorage) -> Any:
    """The trnsim storage over ``owner``'s memory (made once per allocation)."""
    ptr = owner.data_ptr()
    entry = _TABLE.get(ptr)
    if entry is not None:
        trn = entry.trn()
        if trn is not None:
            return trn
    return _register(owner, ptr)


def _register(owner: torch.UntypedStorage, ptr: int) -> Any:
    nbytes = owner.nbytes()
    trn = _new_storage(ptr, device(), nbytes)
    if ptr == 0:
        return trn  # empty storages own nothing
    ref = _Ref(trn, _release)
    ref.ptr = ptr
    _TABLE[ptr] = _Entry(owner, ref, nbytes)
    STATS["allocations"] += 1
    allocated = STATS["allocated"] = STATS["allocated"] + nbytes
    STATS["peak"] = max(STATS["peak"], allocated)
    return trn


_EMPTY = [0]
_set_boxed = _SET._handle.redispatch_boxed


def wrap(cpu: torch.Tensor) -> torch.Tensor:
    """A trnsim tensor over ``cpu``'s memory, same offset, sizes and strides."""
    owner = cpu.untyped_storage()
    entry = _TABLE.get(owner.data_ptr())
    trn = entry.trn() if entry is not None else None
    if trn is None:
        trn = _register(owner, owner.data_ptr())
    return _set_boxed(_CPU_KEYS, _new_tensor(_EMPTY, cpu.dtype), trn, cpu.storage_offset(), cpu.size(), cpu.stride())


def cpu_view(t: torch.Tensor) -> torch.Tensor:
    """A CPU tensor over a trnsim tensor's memory (same offset, sizes, strides, dtype)."""
    ptr = t.untyped_storage().data_ptr()
    entry = _TABLE.get(ptr)
    if entry is None:
        if t.numel() == 0:
            return torch.empty_strided(t.size(), t.stride(), dtype=t.dtype)
        raise RuntimeError(f"trnsim tensor with unknown storage {ptr:#x}")
    dtype = t.dtype
    flat = entry.flat.get(dtype)
    if flat is None:
        flat = entry.flat[dtype] = torch.empty(0, dtype=dtype).set_(entry.owner)
    return flat.as_strided(t.size(), t.stride(), t.storage_offset())


def owner_of(trn: Any) -> torch.UntypedStorage:
    """The CPU storage that owns a trnsim storage's memory."""
    entry = _TABLE.get(trn.data_ptr())
    if entry is None:
        raise RuntimeError(f"trnsim storage with unknown memory {trn.data_ptr():#x}")
    return entry.owner


def repoint(t: torch.Tensor, cpu: torch.Tensor) -> torch.Tensor:
    """Make trnsim tensor ``t`` a view of ``cpu``'s memory (after a host resize moved it)."""
    storage = trn_storage_for(cpu.untyped_storage())
    return _SET.redispatch(_CPU_KEYS, t, storage, cpu.storage_offset(), cpu.size(), cpu.stride())


def empty(size: Any, stride: Any = None, *, dtype: torch.dtype | None = None) -> torch.Tensor:
    """A fresh trnsim tensor (memory from the CPU allocator)."""
    dtype = dtype or torch.get_default_dtype()
    cpu = torch.empty(size, dtype=dtype) if stride is None else torch.empty_strided(size, stride, dtype=dtype)
    return wrap(cpu)


def memory_allocated() -> int:
    """Bytes held by live trnsim storages."""
    return int(STATS["allocated"])


def max_memory_allocated() -> int:
    """Peak of ``memory_allocated`` since the last reset."""
    return int(STATS["peak"])


def reset_peak_memory_stats() -> None:
    """Start a new peak window at the current allocation."""
    STATS["peak"] = STATS["allocated"]


def live_allocations() -> int:
    """Number of live trnsim storages (for leak checks)."""
    return len(_TABLE)
