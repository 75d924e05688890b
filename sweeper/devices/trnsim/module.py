"""``torch.trnsim``: the device module PyTorch looks up by name, and the shims that route
``torch.accelerator`` calls to it."""

from __future__ import annotations

from typing import Any

import torch

import sweeper.devices.trnsim.rng as rng
import sweeper.devices.trnsim.storage as storage

_SHIMMED: dict[str, Any] = {}


class TrnsimModule:
    """What ``torch.trnsim`` offers (the ``torch.cuda`` subset PyTorch and users call)."""

    def is_initialized(self) -> bool:
        return True

    def is_available(self) -> bool:
        return True

    def device_count(self) -> int:
        return 1

    def current_device(self) -> int:
        return 0

    def set_device(self, device: Any) -> None:
        """One device: any index other than 0 is an error."""
        index = device.index if isinstance(device, torch.device) else device
        if index not in (None, 0):
            raise RuntimeError(f"trnsim has one device; got index {index}")

    class device:
        """Context manager selecting a device; one device, so it only validates."""

        def __init__(self, device: Any) -> None:
            self.device = device

        def __enter__(self) -> None:
            TrnsimModule().set_device(self.device)

        def __exit__(self, *exc: object) -> None:
            return None

    def get_device_name(self, device: Any = None) -> str:
        return "trnsim (simulated accelerator)"

    def _is_in_bad_fork(self) -> bool:
        return False

    def manual_seed(self, seed: int) -> None:
        """Seed trnsim's own generator (a stream of its own, not the CPU's: ``rng``)."""
        rng.manual_seed(seed)

    def manual_seed_all(self, seed: int) -> None:
        """See ``manual_seed`` (one device)."""
        rng.manual_seed(seed)

    def synchronize(self, device: Any = None) -> None:
        """Execution is synchronous: nothing is queued."""

    def empty_cache(self) -> None:
        """Freed memory goes straight back to the host allocator."""

    def memory_allocated(self, device: Any = None) -> int:
        return storage.memory_allocated()

    def max_memory_allocated(self, device: Any = None) -> int:
        return storage.max_memory_allocated()

    def reset_peak_memory_stats(self, device: Any = None) -> None:
        storage.reset_peak_memory_stats()

    def memory_reserved(self, device: Any = None) -> int:
        return storage.memory_allocated()

    def max_memory_reserved(self, device: Any = None) -> int:
        return storage.max_memory_allocated()

    def memory_stats(self, device: Any = None) -> dict[str, int]:
        alloc, peak = storage.memory_allocated(), storage.max_memory_allocated()
        return {"allocated_bytes.all.current": alloc, "allocated_bytes.all.peak": peak,
                "reserved_bytes.all.current": alloc, "reserved_bytes.all.peak": peak,
                "allocation.all.current": storage.live_allocations()}

    def get_amp_supported_dtype(self) -> list[torch.dtype]:
        return [torch.bfloat16, torch.float16]

    def is_bf16_supported(self) -> bool:
        return True

    def is_autocast_enabled(self) -> bool:
        return torch.is_autocast_enabled("trnsim")

    def get_autocast_dtype(self) -> torch.dtype:
        return torch.get_autocast_dtype("trnsim")


def _on_trnsim(device: Any) -> bool:
    if device is None:
        acc = torch.accelerator.current_accelerator()
        return acc is not None and acc.type == "trnsim"
    return torch.device(device).type == "trnsim" if not isinstance(device, int) else True


def install_accelerator_shims() -> None:
    """Route ``torch.accelerator`` calls the C++ side cannot serve for a Python backend."""
    if _SHIMMED:
        return
    mod = torch.trnsim
    names = {"synchronize": "synchronize", "empty_cache": "empty_cache", "memory_stats": "memory_stats",
             "memory_allocated": "memory_allocated", "max_memory_allocated": "max_memory_allocated",
             "memory_reserved": "memory_reserved", "max_memory_reserved": "max_memory_reserved",
             "reset_peak_memory_stats": "reset_peak_memory_stats"}
    for acc_name, mod_name in names.items():
        original = getattr(torch.accelerator, acc_name, None)
        if original is None:
            continue
        _SHIMMED[acc_name] = original
        setattr(torch.accelerator, acc_name, _shim(original, getattr(mod, mod_name)))


def _shim(original: Any, ours: Any) -> Any:
    def call(device: Any = None, *args: Any, **kwargs: Any) -> Any:
        if _on_trnsim(device):
            return ours(device)
        return original(device, *args, **kwargs)

    call.__doc__ = original.__doc__
    call.__name__ = original.__name__
    return call
