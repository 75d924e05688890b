"""Zero-copy storage: trnsim tensors are views of CPU memory.

Every trnsim storage is a non-owning storage over the data of a CPU storage (the owner).
A side table, keyed by data pointer, keeps the owner alive until the trnsim storage dies
(a weakref callback; PyTorch preserves a storage's Python object while C++ holds it, so
the callback fires only when the last tensor using it is gone). ``cpu_view`` and ``wrap``
move between the two worlds without copying.

With the C++ fast path (``fastpath``) the table lives in C++, where its kernels reach it:
``use_native()`` points this module's functions there. This Python table is what trnsim
uses without a C++ compiler.
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


class _Entry(weakref.ref):
    """One live allocation: a weak reference to the trnsim storage that also keeps the
    owning CPU storage alive (one object per allocation: this is on every op's path)."""

    __slots__ = ("flat", "nbytes", "owner", "ptr")


_TABLE: dict[int, _Entry] = {}
_DEVICE: list[torch.device] = []
STATS = {"allocated": 0, "peak": 0, "allocations": 0}


def device() -> torch.device:
    """``trnsim:0`` (built lazily: the name exists only after the backend is renamed)."""
    if not _DEVICE:
        _DEVICE.append(torch.device("trnsim", 0))
    return _DEVICE[0]


def _release(entry: _Entry) -> None:
    # The trnsim storage died: drop the owner unless the pointer was reused meanwhile.
    if _TABLE.get(entry.ptr) is entry:
        del _TABLE[entry.ptr]
        STATS["allocated"] -= entry.nbytes
    entry.owner = entry.flat = None


def trn_storage_for(owner: torch.UntypedStorage) -> Any:
    """The trnsim storage over ``owner``'s memory (made once per allocation)."""
    ptr = owner.data_ptr()
    entry = _TABLE.get(ptr)
    if entry is not None:
        trn = entry()
        if trn is not None:
            return trn
    return _register(owner, ptr)


def _register(owner: torch.UntypedStorage, ptr: int) -> Any:
    nbytes = owner.nbytes()
    trn = _new_storage(ptr, _DEVICE[0] if _DEVICE else device(), nbytes)
    if ptr == 0:
        return trn  # empty storages own nothing
    entry = _Entry(trn, _release)
    entry.ptr, entry.owner, entry.nbytes, entry.flat = ptr, owner, nbytes, None
    _TABLE[ptr] = entry
    stats = STATS
    stats["allocations"] += 1
    allocated = stats["allocated"] = stats["allocated"] + nbytes
    stats["peak"] = max(stats["peak"], allocated)
    return trn


_EMPTY = [0]
_set_boxed = _SET._handle.redispatch_boxed


def wrap(cpu: torch.Tensor) -> torch.Tensor:
    """A trnsim tensor over ``cpu``'s memory, same offset, sizes and strides."""
    owner = cpu.untyped_storage()
    ptr = owner.data_ptr()
    entry = _TABLE.get(ptr)
    trn = entry() if entry is not None else None
    if trn is None:
        trn = _register(owner, ptr)
    out = _set_boxed(_CPU_KEYS, _new_tensor(_EMPTY, cpu.dtype), trn, cpu.storage_offset(), cpu.size(), cpu.stride())
    return _with_math_bits(out, cpu) if cpu.is_conj() or cpu.is_neg() else out


def cpu_view(t: torch.Tensor) -> torch.Tensor:
    """A CPU tensor over a trnsim tensor's memory (same offset, sizes, strides, dtype, and
    conjugate / negative bits)."""
    ptr = t.untyped_storage().data_ptr()
    entry = _TABLE.get(ptr)
    if entry is None:
        if t.numel() == 0:
            return _with_math_bits(torch.empty_strided(t.size(), t.stride(), dtype=t.dtype), t)
        raise RuntimeError(f"trnsim tensor with unknown storage {ptr:#x}")
    # One flat CPU tensor per dtype over the whole allocation, made on first use: a CPU
    # view of any trnsim tensor is then a single as_strided call.
    dtype = t.dtype
    flats = entry.flat
    if flats is None:
        flats = entry.flat = {}
    flat = flats.get(dtype)
    if flat is None:
        flat = flats[dtype] = torch.empty(0, dtype=dtype).set_(entry.owner)
    view = flat.as_strided(t.size(), t.stride(), t.storage_offset())
    return _with_math_bits(view, t)


def _with_math_bits(view: torch.Tensor, t: torch.Tensor) -> torch.Tensor:
    """``view`` carrying ``t``'s lazy conjugate / negative bits (``x.conj()``, ``x.conj().imag``):
    the memory holds the unconjugated values, and the host kernels apply the bits as they read."""
    if t.is_conj():
        view = view.conj()
    if t.is_neg():
        view = view._neg_view()
    return view


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


def use_native() -> None:
    """Keep storages in the C++ table of ``fastpath`` (call before any trnsim tensor exists)."""
    import sweeper.devices.trnsim.fastpath as fastpath

    def native_trn_storage_for(owner: torch.UntypedStorage) -> Any:
        return fastpath.wrap(torch.empty(0, dtype=torch.uint8).set_(owner)).untyped_storage()

    def native_owner_of(trn: Any) -> torch.UntypedStorage:
        over = _set_boxed(_CPU_KEYS, _new_tensor(_EMPTY, torch.uint8), trn, 0, [trn.nbytes()], [1])
        return fastpath.host(over).untyped_storage()

    table = globals()
    table.update(
        wrap=fastpath.wrap,
        cpu_view=fastpath.host,
        trn_storage_for=native_trn_storage_for,
        owner_of=native_owner_of,
        memory_allocated=lambda: fastpath.memory("allocated"),
        max_memory_allocated=lambda: fastpath.memory("peak"),
        reset_peak_memory_stats=fastpath.reset_peak,
        live_allocations=lambda: fastpath.memory("live"),
    )
