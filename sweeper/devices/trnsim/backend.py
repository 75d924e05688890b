"""Registration: makes ``trnsim`` a PrivateUse1 device of this process (once, idempotent).

``ensure_registered`` renames PrivateUse1, installs hooks, the ``torch.trnsim`` module and
``torch.accelerator`` shims, one kernel per aten overload, the special kernels, autocast
and serialization support. ``rename_privateuse1_backend`` can only happen once per process,
so a process that already named PrivateUse1 something else cannot host trnsim.
"""

from __future__ import annotations

import itertools
import threading
from typing import Any

import torch
import torch.utils.backend_registration as br

import sweeper.devices.trnsim.fastpath as fastpath
import sweeper.devices.trnsim.kernels as kernels
import sweeper.devices.trnsim.nativeguard as nativeguard
import sweeper.devices.trnsim.refcells as refcells
import sweeper.devices.trnsim.special as special
import sweeper.devices.trnsim.state as state
import sweeper.devices.trnsim.storage as storage
from sweeper.devices.trnsim.errors import LateRegistrationError
from sweeper.devices.trnsim.profile import Profile

NAME = "trnsim"
aten = torch.ops.aten
_LOCK = threading.Lock()
_DONE: dict[str, Any] = {}
# Kept alive for the life of the process: dropping a Library deregisters its kernels.
_LIBS: list[torch.library.Library] = []
_REGISTERED: list[str] = []


class _Hooks(torch._C._acc.PrivateUse1Hooks):
    def is_available(self) -> bool:
        return True

    def has_primary_context(self, dev_id: int) -> bool:
        return True

    def is_built(self) -> bool:
        return True


class _Guard(torch._C._acc.DeviceGuard):
    # The autograd engine asks the guard for its device type around every node it runs
    # (stream guards: ~3 calls per backward op) and at every grad_fn made in forward. A
    # C-level callable that returns the constant answers the override without a Python
    # frame (a method would be one frame per call, most of them on the engine's thread).
    type_ = itertools.repeat(torch._C._autograd.DeviceType.PrivateUse1).__next__


def ensure_registered() -> None:
    """Register the backend in this process (no-op after the first call)."""
    with _LOCK:
        if _DONE:
            return
        current = torch._C._get_privateuse1_backend_name()
        if current not in ("privateuseone", NAME):
            raise RuntimeError(f"PrivateUse1 is already named {current!r} in this process; trnsim needs its own")
        import sweeper.devices.trnsim.module as devmod
        import sweeper.devices.trnsim.patches as patches

        if current != NAME:
            torch.utils.rename_privateuse1_backend(NAME)
            torch._register_device_module(NAME, devmod.TrnsimModule())
            br.generate_methods_for_privateuse1_backend(for_storage=True)
            torch._C._acc.register_python_privateuseone_hook(_Hooks())
            # A C++ guard, as vendor backends have: PyTorch's Python one aborts the process
            # when a backward node fails in Python code (see ``nativeguard``).
            if not nativeguard.register_native_guard():
                torch._C._acc.register_python_privateuseone_device_guard(_Guard())
        devmod.install_accelerator_shims()
        patches.install_serialization()
        patches.install_printing()
        patches.install_nested_guard()
        patches.install_storage_clone()
        _register_kernels()
        # The kernels are Python frames that run while torch.compile'd code executes
        # eagerly (after a graph break): Dynamo must never try to trace them.
        from torch._dynamo import trace_rules

        trace_rules.add("sweeper.devices.trnsim")
        import sweeper.devices.trnsim.autocast as autocast

        autocast.register(_lib("AutocastPrivateUse1"))
        apply_profile(state.active_profile())
        import sweeper.devices.trnsim.compiler as compiler

        compiler.register_backend()
        _DONE["ok"] = True
    _check_autograd_engine()


def _check_autograd_engine() -> None:
    """Fail clearly when autograd cannot reach trnsim: the engine sized its device queues
    at this process's first backward, and trnsim was not registered yet then."""
    probe = torch.ones(1, device=NAME, requires_grad=True)
    try:
        probe.sum().backward()
    except RuntimeError as exc:
        if "device_ready_queues_" not in str(exc):
            raise
        raise LateRegistrationError(
            "trnsim was registered after this process's first backward pass, so autograd cannot run on it: "
            "import sweeper.devices.trnsim before any backward"
        ) from None


def apply_profile(profile: Profile) -> None:
    """Make ``profile`` the one kernels and the compiler apply."""
    state.use_profile(profile)
    extra = [op for op in profile.listed_ops() if op not in _DONE.get("names", ())]
    _register_profile_ops(extra)
    kernels.apply_profile(profile, _REGISTERED)
    _forward_ad(profile.allows("forward_ad"))
    import sweeper.devices.trnsim.compiler as compiler

    compiler.follow_profile_shapes(profile.allows("dynamic_shapes"))


def _forward_ad(allowed: bool) -> None:
    """Refuse ``_make_dual`` on trnsim (above autograd) unless the profile allows it."""
    if ("forward_ad_lib" not in _DONE) == allowed:
        return  # already as asked
    lib = _DONE.pop("forward_ad_lib", None)
    if lib is not None:
        lib._destroy()
    if not allowed:
        lib = torch.library.Library("aten", "IMPL")
        lib.impl(aten._make_dual.default, special.refuse_forward_ad, "AutogradPrivateUse1")
        _DONE["forward_ad_lib"] = lib


def _lib(key: str | None = None) -> torch.library.Library:
    lib = torch.library.Library("aten" if key != "_" else "_", "IMPL")
    _LIBS.append(lib)
    return lib


def _overload(name: str) -> torch._ops.OpOverload | None:
    base, _, overload = name[len("aten::"):].partition(".")
    packet = getattr(aten, base, None)
    try:
        return getattr(packet, overload or "default") if packet is not None else None
    except AttributeError:
        return None


def _register_kernels() -> None:
    """One generic kernel per aten overload that has a CPU kernel, then the special ones."""
    lib = _lib()
    specials = _special_kernels()
    names: set[str] = set()
    native = fastpath.enabled()
    if native:
        storage.use_native()
    for name in torch._C._dispatch_get_all_op_names():
        if not name.startswith("aten::") or name in specials:
            continue
        if not _host_level(name):
            continue
        op = _overload(name)
        if op is None:
            continue
        # The C++ kernel takes the op's common case and hands the rest to the Python one.
        spec = kernels.fast_spec(op, name) if native else None
        key = "PrivateUse2" if spec is not None and fastpath.register(name, *spec) else "PrivateUse1"
        lib.impl(op, kernels.make_kernel(op, name), key)
        names.add(name)
    for name, fn in specials.items():
        op = _overload(name)
        if op is not None:
            lib.impl(op, fn, "PrivateUse1")
            names.add(name)
    _REGISTERED.extend(sorted(names))
    _DONE["names"] = names
    _register_math_bit_copies()
    anylib = _lib("_")
    for key, feature in (("SparsePrivateUse1", "sparse"), ("SparseCsrPrivateUse1", "sparse"),
                         ("NestedTensorPrivateUse1", "nested")):
        try:
            anylib.fallback(special.refuse_layout(feature), dispatch_key=key, with_keyset=False)
        except (RuntimeError, TypeError):
            pass  # torch builds without the key: nothing can reach it anyway


def _register_math_bit_copies() -> None:
    """Copies of conjugate / negative views: the math-bit fallbacks of the Conjugate and
    Negative keys recurse through ``_copy_from`` for any device but CPU and CUDA. PyTorch
    calls ``_copy_from`` only when a side is not CPU or CUDA, so this reaches trnsim only."""
    for key in ("Conjugate", "Negative"):
        lib = _lib(key)
        lib.impl(aten._copy_from.default, special.copy_from_math_bits, key)
        lib.impl(aten._copy_from_and_resize.default, special.copy_from_and_resize_math_bits, key)


def _host_level(name: str) -> bool:
    """Whether ``name`` gets a trnsim kernel: it has a CPU kernel, or it is a foreach op
    (whose CPU kernels are registered as composite: one host call for the whole list is
    what a device's fused multi-tensor kernel is, instead of one dispatch per tensor)."""
    if torch._C._dispatch_has_kernel_for_dispatch_key(name, "CPU"):
        return True
    return name.startswith("aten::_foreach_") and \
        torch._C._dispatch_has_kernel_for_dispatch_key(name, "CompositeExplicitAutograd")


def _special_kernels() -> dict[str, Any]:
    table: dict[str, Any] = {
        "aten::_copy_from": special.copy_from,
        "aten::_copy_from_and_resize": special.copy_from_and_resize,
        "aten::resize_": special.resize_,
        "aten::set_": special.set_empty,
        "aten::set_.source_Storage": special.set_storage,
        "aten::set_.source_Storage_storage_offset": special.metadata_only(aten.set_.source_Storage_storage_offset),
        "aten::set_.source_Tensor": special.metadata_only(aten.set_.source_Tensor),
        "aten::set_.source_Tensor_storage_offset": special.metadata_only(aten.set_.source_Tensor_storage_offset),
        "aten::convolution_overrideable": special.convolution_overrideable,
        "aten::convolution_backward_overrideable": special.convolution_backward_overrideable,
        "aten::_has_compatible_shallow_copy_type": special.shallow_copy_compatible,
    }
    for name, fn in refcells.REFERENCE.items():
        table[name] = refcells.as_kernel(fn, name)
    return table


def _register_profile_ops(names: list[str]) -> None:
    """Profile ops without a CPU kernel (composite) still get a kernel, so the whole op is
    intercepted, checked and run on the host instead of silently decomposing."""
    if not names:
        return
    lib = _lib()
    done: set[str] = _DONE.setdefault("names", set())
    for key in names:
        base = key.split(".", 1)[0][len("aten::"):]
        packet = getattr(aten, base)
        for overload in packet.overloads():
            full = f"aten::{base}" + ("" if overload == "default" else f".{overload}")
            if full in done or not torch._C._dispatch_has_kernel_for_dispatch_key(full, "CompositeExplicitAutograd"):
                continue
            op = getattr(packet, overload)
            lib.impl(op, kernels.make_kernel(op, full), "PrivateUse1")
            done.add(full)
            _REGISTERED.append(full)
