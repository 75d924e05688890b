"""The generic trnsim kernel: one Python kernel per aten overload, built from its schema.

Each kernel applies the profile (dtype, per-op policy, features), counts the op while a
recording is open, runs the CPU kernel on CPU views of its trnsim arguments and maps the
results back: an in-place or ``out=`` result is its own argument, an output that aliases an
input's memory becomes a trnsim view of it, a fresh output gets wrapped without a copy.
View ops with CPU kernels only rewire metadata, so they run on the trnsim tensors directly.

The profile is compiled into ``POLICY`` (op -> eager policy, native ops absent) and
``ALLOWED_DTYPES``: the hot path pays one dict lookup and one set membership per tensor.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch

from sweeper.devices.trnsim import state, storage
from sweeper.devices.trnsim.errors import UnsupportedDtypeError, UnsupportedFeatureError, UnsupportedOpError
from sweeper.devices.trnsim.profile import Profile

Tensor = torch.Tensor
_CPU = torch.device("cpu")
_CPU_KEYS = torch._C.DispatchKeySet(torch._C.DispatchKey.CPU)
POLICY: dict[str, str] = {}
ALLOWED_DTYPES: set[torch.dtype] = set()
# Ops that construct sparse or nested tensors from dense ones: refused per feature flag.
_FEATURE_MARKERS = (("sparse", "sparse"), ("_nested", "nested"), ("to_mkldnn", "mkldnn"))


def apply_profile(profile: Profile, op_names: list[str]) -> None:
    """Compile ``profile`` into the tables every kernel reads."""
    POLICY.clear()
    for name in op_names:
        policy = profile.policy(name, "eager")
        if policy != "native":
            POLICY[name] = policy
    ALLOWED_DTYPES.clear()
    ALLOWED_DTYPES.update(profile.dtypes)


def check_policy(name: str, policy: str) -> None:
    """Refuse or record an op the profile does not run natively."""
    if policy == "fallback":
        state.note_fallback(name)
    else:
        state.refuse(UnsupportedOpError(f"{name} is not supported by trnsim ({_family(name)})", op=name))


def _family(name: str) -> str:
    fams = state.active_profile().families
    return fams.get(name) or fams.get(name.split(".", 1)[0]) or "refused by the profile"


def refuse_dtype(name: str, dtype: torch.dtype) -> None:
    """Refuse a tensor whose dtype the chip has no format for."""
    state.refuse(UnsupportedDtypeError(f"{name}: trnsim has no {dtype} support", op=name, dtype=str(dtype)))


def _feature(name: str) -> str | None:
    for marker, feature in _FEATURE_MARKERS:
        if marker in name:
            return feature
    return None


def _unwrap(a: Any, name: str, keep: dict[int, Tensor]) -> Any:
    """CPU view of a trnsim tensor (or list of them); other values pass through."""
    if isinstance(a, Tensor):
        if a.is_cpu:
            return a
        if a.dtype not in ALLOWED_DTYPES:
            refuse_dtype(name, a.dtype)
        c = storage.cpu_view(a)
        keep[id(c)] = a
        return c
    if isinstance(a, (list, tuple)) and a and any(isinstance(x, Tensor) for x in a):
        return type(a)(_unwrap(x, name, keep) for x in a)
    return a


def _rewrap(r: Any, name: str, keep: dict[int, Tensor]) -> Any:
    """Map a CPU result back to trnsim (same object for in-place/out=, views for aliases)."""
    if isinstance(r, Tensor):
        orig = keep.get(id(r))
        if orig is not None:
            if orig.untyped_storage().data_ptr() != r.untyped_storage().data_ptr():
                storage.repoint(orig, r)  # the host resized an out= tensor: follow it
            return orig
        if r.dtype not in ALLOWED_DTYPES:
            refuse_dtype(name, r.dtype)
        return storage.wrap(r)
    if isinstance(r, (list, tuple)):
        return type(r)(_rewrap(x, name, keep) for x in r)
    return r


def make_kernel(op: torch._ops.OpOverload, name: str) -> Callable[..., Any]:
    """The PrivateUse1 kernel for one aten overload."""
    schema = op._schema
    arg_names = {a.name for a in schema.arguments}
    factory = "device" in arg_names
    has_dtype = "dtype" in arg_names
    feature = _feature(name)
    is_view = any(r.alias_info is not None and not r.alias_info.is_write for r in schema.returns)
    policy_get = POLICY.get
    recs = state.STATE.recordings

    def kernel(*args: Any, **kwargs: Any) -> Any:
        policy = policy_get(name)
        if policy is not None:
            check_policy(name, policy)
        if recs:
            state.note_op(name)
        if feature is not None and not state.active_profile().allows(feature):
            state.refuse(UnsupportedFeatureError(f"{name}: trnsim has no {feature} tensors", op=name, feature=feature))
        if kwargs:
            if has_dtype and kwargs.get("dtype") is not None and kwargs["dtype"] not in ALLOWED_DTYPES:
                refuse_dtype(name, kwargs["dtype"])
            if factory and kwargs.get("device") is not None:
                kwargs["device"] = _CPU
            layout = kwargs.get("layout")
            if layout is not None and layout != torch.strided:
                state.refuse(UnsupportedFeatureError(f"{name}: trnsim has no {layout} tensors", op=name, feature="sparse"))
                kwargs["layout"] = torch.strided
        if is_view:
            for a in args:
                if isinstance(a, Tensor) and a.dtype not in ALLOWED_DTYPES:
                    refuse_dtype(name, a.dtype)
            return op.redispatch(_CPU_KEYS, *args, **kwargs)
        keep: dict[int, Tensor] = {}
        cargs = [_unwrap(a, name, keep) for a in args]
        ckw = {k: _unwrap(v, name, keep) for k, v in kwargs.items()} if kwargs else kwargs
        return _rewrap(op(*cargs, **ckw), name, keep)

    kernel.__name__ = f"trnsim_{name.replace('::', '_').replace('.', '_')}"
    return kernel


def host_call(op: Callable[..., Any], name: str, *args: Any, **kwargs: Any) -> Any:
    """Run ``op`` on CPU views of trnsim arguments and map results back (special kernels)."""
    keep: dict[int, Tensor] = {}
    cargs = [_unwrap(a, name, keep) for a in args]
    ckw = {k: _unwrap(v, name, keep) for k, v in kwargs.items()}
    return _rewrap(op(*cargs, **ckw), name, keep)
