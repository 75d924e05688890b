"""trnsim's eager fast path and storage table in C++ (``native/fastpath.cpp``).

A Python kernel per op costs a trip from the dispatcher into Python, a CPU view per
argument and a wrapped tensor per result: 7 to 18 µs an op before the host does any work.
A vendor's runtime dispatches in C++; so does trnsim for the common case. For every
generic op the C++ kernel sits on PrivateUse1 and the Python kernel (``kernels.py``) on
PrivateUse2: the C++ kernel runs a native op whose trnsim arguments all have a dtype the
profile allows and hands anything else (a fallback or refused op, a refused dtype, a float32
math that rounds the factors) to the Python kernel, which decides exactly as before. Op
counts for open recordings are kept per op in C++ and taken by ``state`` when a recording
opens or closes.

The storage table lives in C++ as well (one trnsim storage per host allocation, holding
it), so both kinds of kernel share it; ``storage.py`` calls it through ``wrap`` / ``host``.

Built once per torch build like the device guard (``cbuild``). Without a C++ compiler, or
with ``TRNSIM_NATIVE_KERNELS=0``, every op takes the Python kernel and ``storage.py`` its
Python table; ``kind()`` says which and why.
"""

from __future__ import annotations

import ctypes
import os
import subprocess
from importlib import resources
from typing import Any

import torch

import sweeper.devices.trnsim.cbuild as cbuild

# Kinds of fast kernel (fastpath.cpp's Kind).
FUNCTIONAL, INPLACE, VIEW, INPLACE_VIEW = 0, 1, 2, 3

_KIND: list[str] = []
_LIB: list[ctypes.CDLL] = []
# Index of each fast op in the C++ table -> its aten name ("aten::add.Tensor").
NAMES: list[str] = []
INDEX: dict[str, int] = {}
_OPS: dict[str, Any] = {}


def kind() -> str:
    """``native`` when the C++ fast path is loaded, else ``python: <why>``."""
    return _KIND[0] if _KIND else "none"


def enabled() -> bool:
    """Whether the C++ fast path and storage table are in use (loaded on first call)."""
    if not _KIND:
        _load()
    return _KIND[0] == "native"


def _load() -> None:
    if os.environ.get("TRNSIM_NATIVE_KERNELS", "1") == "0":
        _KIND.append("python: TRNSIM_NATIVE_KERNELS=0")
        return
    try:
        source = resources.files("sweeper.devices.trnsim").joinpath("native/fastpath.cpp").read_text()
        path = cbuild.compiled("trnsim_fastpath", source, ("c10", "torch_cpu"), std="c++20")
        torch.ops.load_library(str(path))
        lib = ctypes.CDLL(str(path))
    except (OSError, subprocess.SubprocessError, RuntimeError) as exc:
        _KIND.append(f"python: native fast path not built ({type(exc).__name__}: {str(exc)[:200]})")
        return
    lib.trnsim_fast_add.argtypes = [ctypes.c_char_p, ctypes.c_int, ctypes.c_int]
    lib.trnsim_fast_add.restype = ctypes.c_int
    lib.trnsim_fast_error.restype = ctypes.c_char_p
    lib.trnsim_fast_set_python.argtypes = [ctypes.c_int, ctypes.c_int]
    lib.trnsim_fast_set_dtypes.argtypes = [ctypes.c_uint64]
    lib.trnsim_fast_set_counting.argtypes = [ctypes.c_int]
    lib.trnsim_fast_enable.argtypes = [ctypes.c_int]
    lib.trnsim_fast_take_counts.argtypes = [ctypes.POINTER(ctypes.c_int64), ctypes.c_int]
    lib.trnsim_fast_take_counts.restype = ctypes.c_int
    for name in ("allocated", "peak", "live", "allocations"):
        getattr(lib, f"trnsim_mem_{name}").restype = ctypes.c_int64
    _LIB.append(lib)
    _OPS["wrap"] = torch.ops.trnsim_native.wrap.default._op
    _OPS["host"] = torch.ops.trnsim_native.host.default._op
    _OPS["scalar_type"] = torch.ops.trnsim_native.scalar_type.default._op  # c10's number: the mask's bit
    _KIND.append("native")


def register(name: str, fast_kind: int, dtype_arg: int) -> bool:
    """Put the C++ kernel on PrivateUse1 for aten op ``name`` (its Python kernel then goes
    on PrivateUse2); False when the op cannot take it."""
    lib = _LIB[0]
    index = lib.trnsim_fast_add(name[len("aten::"):].encode(), fast_kind, dtype_arg)
    if index < 0:
        return False
    NAMES.append(name)
    INDEX[name] = index
    return True


def set_python(name: str, python: bool) -> None:
    """Send every call of fast op ``name`` to its Python kernel (a policy other than native,
    a rounding float32 math) or let the C++ kernel take it again."""
    index = INDEX.get(name)
    if index is not None:
        _LIB[0].trnsim_fast_set_python(index, int(python))


def set_dtypes(dtypes: set[torch.dtype]) -> None:
    """The dtypes the C++ kernel accepts (any other goes to the Python kernel, which refuses it)."""
    mask = 0
    for dtype in dtypes:
        mask |= 1 << _OPS["scalar_type"](torch.empty(0, dtype=dtype))
    _LIB[0].trnsim_fast_set_dtypes(mask)


def set_counting(on: bool) -> None:
    """Count the C++ kernel's ops (while a recording is open)."""
    if _LIB:
        _LIB[0].trnsim_fast_set_counting(int(on))


def take_counts() -> dict[str, int]:
    """Ops the C++ kernels ran since the last call, by name (and reset)."""
    if not _LIB or not NAMES:
        return {}
    buf = (ctypes.c_int64 * len(NAMES))()
    _LIB[0].trnsim_fast_take_counts(buf, len(NAMES))
    return {NAMES[i]: n for i, n in enumerate(buf) if n}


def wrap(cpu: torch.Tensor) -> torch.Tensor:
    """A trnsim tensor over ``cpu``'s memory."""
    return _OPS["wrap"](cpu)


def host(t: torch.Tensor) -> torch.Tensor:
    """A CPU tensor over a trnsim tensor's memory."""
    return _OPS["host"](t)


def memory(stat: str) -> int:
    """``allocated``, ``peak``, ``live`` or ``allocations`` of the C++ storage table."""
    return int(getattr(_LIB[0], f"trnsim_mem_{stat}")())


def reset_peak() -> None:
    """Start a new peak window at the current allocation."""
    _LIB[0].trnsim_mem_reset_peak()
