"""trnsim's device guard in C++, as a vendor backend ships it (built once, cached).

PyTorch's Python-backend guard (``torch._C._acc.DeviceGuard``) answers every call, even
the ``noexcept`` ones, by calling the Python method ``type_``. The autograd engine puts a
stream guard around each backward node of a device; when a node fails with an exception
raised in Python (a ``__torch_dispatch__`` mode: AOT autograd tracing a backward under
fake tensors hits a data-dependent op), the C++ exception unwinds with Python's error
indicator still set, the guard's destructor calls ``exchangeStream`` -> ``type_``, that
call fails, and a ``noexcept`` function throwing ends the process with SIGABRT
("terminate called without an active exception"). On the CPU the same failure is an
ordinary exception that Dynamo turns into a graph break. A real vendor backend
(torch_npu, torch_mlu, ...) registers a C++ guard that never calls into Python, so the
abort is the simulator's artefact, never the chip's.

This module compiles the equivalent C++ guard (same answers as PyTorch's Python one: one
device, index 0, a default stream, events that complete at once) against the installed
torch headers with the system C++ compiler and registers it before the Python guard would
be. The library is cached per torch build and source under ``TRNSIM_GUARD_CACHE`` (default
``~/.cache/sweeper/trnsim-guard``). Without a compiler, or with ``TRNSIM_NATIVE_GUARD=0``,
the Python guard stays in use and ``guard_kind()`` says why.
"""

from __future__ import annotations

import ctypes
import os
import subprocess
from pathlib import Path

import sweeper.devices.trnsim.cbuild as cbuild

_SOURCE = r"""
#include <c10/core/impl/DeviceGuardImplInterface.h>
namespace {
using namespace c10;
const Device kDevice(DeviceType::PrivateUse1, 0);
struct TrnsimGuard final : public c10::impl::DeviceGuardImplInterface {
  DeviceType type() const override { return DeviceType::PrivateUse1; }
  Device exchangeDevice(Device) const override { return kDevice; }
  Device getDevice() const override { return kDevice; }
  void setDevice(Device) const override {}
  void uncheckedSetDevice(Device) const noexcept override {}
  Stream getStream(Device) const noexcept override { return Stream(Stream::DEFAULT, kDevice); }
  Stream getNewStream(Device, int) const override { return Stream(Stream::DEFAULT, kDevice); }
  Stream exchangeStream(Stream) const noexcept override { return Stream(Stream::DEFAULT, kDevice); }
  DeviceIndex deviceCount() const noexcept override { return 1; }
  void record(void**, const Stream&, const DeviceIndex, const EventFlag) const override {}
  void block(void*, const Stream&) const override {}
  bool queryEvent(void*) const override { return true; }
  void destroyEvent(void*, const DeviceIndex) const noexcept override {}
  bool queryStream(const Stream&) const override { return true; }
  void synchronizeStream(const Stream&) const override {}
};
}  // namespace
extern "C" int trnsim_register_guard() {
  if (c10::impl::hasDeviceGuardImpl(DeviceType::PrivateUse1)) return 0;
  c10::impl::registerDeviceGuard(DeviceType::PrivateUse1, new TrnsimGuard());
  return 1;
}
"""

# What guards trnsim in this process: "native", or "python: <why not native>".
_KIND: list[str] = []
_LOADED: list[ctypes.CDLL] = []  # kept for the life of the process: the guard lives in it


def guard_kind() -> str:
    """``native`` when the C++ guard is registered, else ``python: <why>`` (or ``none``)."""
    return _KIND[0] if _KIND else "none"


def register_native_guard() -> bool:
    """Build (once) and register the C++ guard for PrivateUse1; False, with the reason in
    ``guard_kind()``, when it cannot be built or another guard is registered already."""
    if _KIND:
        return _KIND[0] == "native"
    if os.environ.get("TRNSIM_NATIVE_GUARD", "1") == "0":
        _KIND.append("python: TRNSIM_NATIVE_GUARD=0")
        return False
    try:
        lib = ctypes.CDLL(str(_library()))
        registered = lib.trnsim_register_guard()
    except (OSError, subprocess.SubprocessError, RuntimeError) as exc:
        _KIND.append(f"python: native guard not built ({type(exc).__name__}: {str(exc)[:200]})")
        return False
    _LOADED.append(lib)
    _KIND.append("native" if registered else "python: a PrivateUse1 guard was registered before")
    return bool(registered)


def _library() -> Path:
    """The cached shared library (compiled first when missing)."""
    return cbuild.compiled("trnsim_guard", _SOURCE, ("c10",))
