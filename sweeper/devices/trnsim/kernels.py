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

import weakref
from collections.abc import Callable
from typing import Any

import torch

import sweeper.devices.trnsim.fastpath as fastpath
import sweeper.devices.trnsim.rng as rng
import sweeper.devices.trnsim.state as state
import sweeper.devices.trnsim.storage as storage
from sweeper.devices.precision import MANTISSA_BITS, round_mantissa
from sweeper.devices.trnsim.errors import (
    UnsupportedDtypeError,
    UnsupportedFeatureError,
    UnsupportedOpError,
)
from sweeper.devices.trnsim.profile import Profile

Tensor = torch.Tensor
_CPU = torch.device("cpu")
_CPU_KEYS = torch._C.DispatchKeySet(torch._C.DispatchKey.CPU)
POLICY: dict[str, str] = {}
ALLOWED_DTYPES: set[torch.dtype] = set()
# Mantissa bits float32 inputs keep, per op family ("matmul", "conv"), when the profile
# declares a reduced float32 math (TF32); absent: exact float32.
ROUND_BITS: dict[str, int] = {}
# Host kernels whose float32 operands a TF32 unit reads rounded (cuBLAS's TF32 set), with
# the positions of the product's factors (``addmm``'s added ``self`` is not rounded).
MATMUL_OPS: dict[str, tuple[int, ...]] = {
    "aten::mm": (0, 1), "aten::bmm": (0, 1), "aten::mv": (0, 1),
    "aten::addmm": (1, 2), "aten::baddbmm": (1, 2), "aten::addbmm": (1, 2), "aten::addmv": (1, 2),
}
# Ops that construct sparse or nested tensors from dense ones: refused per feature flag.
_FEATURE_MARKERS = (("sparse", "sparse"), ("_nested", "nested"), ("to_mkldnn", "mkldnn"))


def apply_profile(profile: Profile, op_names: list[str]) -> None:
    """Compile ``profile`` into the tables every kernel reads, the C++ fast path's included."""
    POLICY.clear()
    for name in op_names:
        policy = profile.policy(name, "eager")
        if policy != "native":
            POLICY[name] = policy
    ALLOWED_DTYPES.clear()
    ALLOWED_DTYPES.update(profile.dtypes)
    ROUND_BITS.clear()
    math = profile.float32_math
    for family, mode in (("matmul", math.matmul), ("conv", math.conv)):
        if MANTISSA_BITS[mode] < 23:
            ROUND_BITS[family] = MANTISSA_BITS[mode]
    if fastpath.NAMES:
        fastpath.set_dtypes(ALLOWED_DTYPES)
        for name in fastpath.NAMES:
            rounds = "matmul" in ROUND_BITS and name.split(".", 1)[0] in MATMUL_OPS
            fastpath.set_python(name, name in POLICY or rounds)


def fast_spec(op: torch._ops.OpOverload, name: str) -> tuple[int, int] | None:
    """(kind, index of its ``dtype`` argument or -1) of the C++ kernel that can take ``op``'s
    common case (``fastpath``), or None when only the Python kernel can: random ops (trnsim's
    own generator), factories and layouts (device and layout arguments), sparse and nested
    constructors (profile features), and ops writing any argument but ``self``."""
    schema = op._schema
    names = [a.name for a in schema.arguments]
    if torch.Tag.nondeterministic_seeded in op.tags or _feature(name) is not None:
        return None
    if {"device", "layout", "pin_memory", "generator"} & set(names):
        return None
    dtype_arg = names.index("dtype") if "dtype" in names else -1
    if torch.Tag.inplace_view in op.tags:
        return fastpath.INPLACE_VIEW, dtype_arg
    if any(r.alias_info is not None and not r.alias_info.is_write for r in schema.returns):
        return fastpath.VIEW, dtype_arg
    if _writes_self_only(schema):
        return fastpath.INPLACE, dtype_arg
    if any(a.alias_info is not None and a.alias_info.is_write for a in schema.arguments):
        return None
    return fastpath.FUNCTIONAL, dtype_arg


def rounded(family: str, args: list[Any], operands: tuple[int, ...]) -> list[Any]:
    """``args`` with the product's factors (``operands``) as the profile's float32 math
    reads them for ``family`` (unchanged when it is exact float32)."""
    bits = ROUND_BITS.get(family)
    if bits is None:
        return args
    return [round_mantissa(a, bits) if i in operands and isinstance(a, Tensor) else a for i, a in enumerate(args)]


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


class _ViewRef(weakref.ref):
    """A weak reference to a trnsim tensor carrying its cached CPU view."""

    __slots__ = ("key", "view")


# id(trnsim tensor) -> its cached CPU view. Kept beside the tensors, not in their __dict__:
# a tensor's __dict__ travels with torch.save and copy.deepcopy.
_VIEWS: dict[int, _ViewRef] = {}


def _forget(ref: _ViewRef) -> None:
    if _VIEWS.get(ref.key) is ref:
        del _VIEWS[ref.key]


def remember_view(t: Tensor, c: Tensor) -> None:
    """Cache ``c`` as the CPU view of trnsim tensor ``t``."""
    ref = _ViewRef(t, _forget)
    ref.key, ref.view = id(t), c
    _VIEWS[id(t)] = ref


def host_view(t: Tensor) -> Tensor:
    """CPU view of a trnsim tensor, cached while the tensor lives and its metadata holds.

    Parameters and activations reach many ops; rebuilding the view each time costs more
    than the check. The check (pointer, dtype, sizes, strides) catches every way a tensor's
    metadata changes without a kernel seeing it (``p.data = ...``, in-place view ops).
    """
    ref = _VIEWS.get(id(t))
    if ref is not None and ref() is t:
        c = ref.view
        if c.data_ptr() == t.data_ptr() and c.dtype is t.dtype and c.shape == t.shape and c.stride() == t.stride():
            return c
    c = storage.cpu_view(t)
    remember_view(t, c)
    return c


def _unwrap(a: Any, name: str, keep: dict[int, Tensor] | None) -> Any:
    """CPU view of a trnsim tensor (or list of them); other values pass through."""
    if isinstance(a, Tensor):
        if a.is_cpu:
            return a
        if a.dtype not in ALLOWED_DTYPES:
            refuse_dtype(name, a.dtype)
        c = host_view(a)
        if keep is not None:
            keep[id(c)] = a
        return c
    if isinstance(a, (list, tuple)) and a and any(isinstance(x, Tensor) for x in a):
        return type(a)(_unwrap(x, name, keep) for x in a)
    return a


def _rewrap(r: Any, name: str, keep: dict[int, Tensor] | None) -> Any:
    """Map a CPU result back to trnsim (same object for in-place/out=, views for aliases)."""
    if isinstance(r, Tensor):
        if keep is not None:
            orig = keep.get(id(r))
            if orig is not None:
                if orig.data_ptr() != r.data_ptr() or orig.shape != r.shape:
                    storage.repoint(orig, r)  # the host resized an out= tensor: follow it
                return orig
        if r.dtype not in ALLOWED_DTYPES:
            refuse_dtype(name, r.dtype)
        out = storage.wrap(r)
        remember_view(out, r)  # the next op reading it needs this very view
        return out
    if isinstance(r, (list, tuple)):
        return type(r)(_rewrap(x, name, keep) for x in r)
    return r


_NUMBER = (bool, int, float, complex)


def _wrap_number(n: bool | int | float | complex, args: list[Any]) -> Tensor:
    """A 0-dim CPU tensor standing for a wrapped Python number in a ``Tensor`` argument.

    Scalar overloads (``x % 3``, ``x & 1``) wrap their number and call the Tensor overload;
    a Python kernel receives it unwrapped, as a number, and the C++ entry point takes no
    number where the schema says Tensor. The dtype is the one the number would promote to
    beside the op's first tensor, so the result's dtype is the one CPU gives.
    """
    like = next((a for a in args if isinstance(a, Tensor)), None)
    dtype = torch.result_type(like, n) if like is not None else None
    return torch.tensor(n, dtype=dtype)


_NO_RETRY = object()


def _with_numbers(call: Callable[..., Any], cargs: list[Any], kwargs: dict[str, Any], tensor_slots: frozenset[int]) -> Any:
    """The call again with Python numbers in Tensor slots wrapped (``x % 3``, ``x & 1``), or
    ``_NO_RETRY`` when there are none. Rare: only after the plain call failed, so the hot
    path pays nothing for it."""
    numbers = [i for i, a in enumerate(cargs) if i in tensor_slots and isinstance(a, _NUMBER)]
    if not numbers:
        return _NO_RETRY
    for i in numbers:
        cargs[i] = _wrap_number(cargs[i], cargs)
    return call(*cargs, **kwargs)


def make_kernel(op: torch._ops.OpOverload, name: str) -> Callable[..., Any]:
    """The PrivateUse1 kernel for one aten overload."""
    schema = op._schema
    tensor_slots = frozenset(
        i for i, a in enumerate(schema.arguments) if not a.kwarg_only and isinstance(a.type, torch._C.TensorType)
    )
    arg_names = {a.name for a in schema.arguments}
    factory = "device" in arg_names
    has_dtype = "dtype" in arg_names
    feature = _feature(name)
    # Ops that only rewire metadata (views, in-place views) run on the trnsim tensors.
    metadata_only = torch.Tag.inplace_view in op.tags or \
        any(r.alias_info is not None and not r.alias_info.is_write for r in schema.returns)
    mutates = any(a.alias_info is not None and a.alias_info.is_write for a in schema.arguments)
    inplace = _writes_self_only(schema)
    policy_get = POLICY.get
    recs = state.STATE.recordings
    # The C++ entry point, without OpOverload.__call__'s Python frame. (Not a redispatch to
    # the CPU key: Python kernels receive wrapped numbers as Python scalars, and only the
    # full call turns them back into tensors.)
    call = op._op
    redispatch = op._handle.redispatch_boxed
    matmul = MATMUL_OPS.get(name.split(".", 1)[0])
    seeded = torch.Tag.nondeterministic_seeded in op.tags

    def kernel(*args: Any, **kwargs: Any) -> Any:
        policy = policy_get(name)
        if policy is not None:
            check_policy(name, policy)
        if recs:
            state.note_op(name)
        if feature is not None and not state.active_profile().allows(feature):
            state.refuse(UnsupportedFeatureError(f"{name}: trnsim has no {feature} tensors", op=name, feature=feature))
        if kwargs:
            _check_kwargs(name, kwargs, has_dtype, factory)
        if metadata_only:
            out = redispatch(_CPU_KEYS, *args, **kwargs)
            if isinstance(out, Tensor) and out.dtype not in ALLOWED_DTYPES:
                refuse_dtype(name, out.dtype)  # the input's dtype, or a view.dtype target
            return out
        if inplace:
            return _inplace(call, name, args, kwargs, tensor_slots)
        keep: dict[int, Tensor] | None = {} if mutates else None
        cargs = []
        for a in args:
            if isinstance(a, Tensor) and not a.is_cpu and keep is None and a.dtype in ALLOWED_DTYPES:
                cargs.append(host_view(a))  # the common case, inline
            else:
                cargs.append(_unwrap(a, name, keep))
        if kwargs:
            kwargs = {k: _unwrap(v, name, keep) for k, v in kwargs.items()}
        if matmul and ROUND_BITS and keep is None:  # a declared TF32 math reads its factors rounded
            cargs = rounded("matmul", cargs, matmul)
        try:
            out = call(*cargs, **kwargs)
        except RuntimeError:
            out = _with_numbers(call, cargs, kwargs, tensor_slots)
            if out is _NO_RETRY:
                raise
        return _rewrap(out, name, keep)

    kernel.__name__ = f"trnsim_{name.replace('::', '_').replace('.', '_')}"
    if seeded:
        return _own_stream(kernel)
    return kernel


def _own_stream(kernel: Callable[..., Any]) -> Callable[..., Any]:
    """A random op's kernel drawing from trnsim's own generator (``rng``) unless the caller
    passed a generator of its own."""

    def random_kernel(*args: Any, **kwargs: Any) -> Any:
        if kwargs.get("generator") is not None:
            return kernel(*args, **kwargs)
        with rng.drawing():
            return kernel(*args, **kwargs)

    random_kernel.__name__ = kernel.__name__
    return random_kernel


def _writes_self_only(schema: Any) -> bool:
    """Whether an op writes its first argument alone, a Tensor, and returns it (``add_``,
    ``mul_``, ``fill_``...): the in-place path then needs no table of every argument."""
    args, rets = schema.arguments, schema.returns
    writes = [i for i, a in enumerate(args) if a.alias_info is not None and a.alias_info.is_write]
    if writes != [0] or args[0].kwarg_only or not isinstance(args[0].type, torch._C.TensorType):
        return False
    return len(rets) == 1 and rets[0].alias_info is not None and rets[0].alias_info.is_write and \
        rets[0].alias_info.before_set == args[0].alias_info.before_set


def _inplace(call: Callable[..., Any], name: str, args: tuple[Any, ...], kwargs: dict[str, Any],
             tensor_slots: frozenset[int]) -> Any:
    """Run an op that writes ``args[0]`` alone on host views; the result is ``args[0]``."""
    self_t = args[0]
    cargs = [_unwrap(a, name, None) for a in args]
    if kwargs:
        kwargs = {k: _unwrap(v, name, None) for k, v in kwargs.items()}
    host = cargs[0]
    try:
        out = call(*cargs, **kwargs)
    except RuntimeError:
        out = _with_numbers(call, cargs, kwargs, tensor_slots)
        if out is _NO_RETRY:
            raise
    if out is not host or self_t.is_cpu:
        # Not the usual in-place return: map it back the general way.
        return _rewrap(out, name, None if self_t.is_cpu else {id(host): self_t})
    if host.data_ptr() != self_t.data_ptr() or host.shape != self_t.shape:
        storage.repoint(self_t, host)  # the host resized it: follow
    return self_t


def _check_kwargs(name: str, kwargs: dict[str, Any], has_dtype: bool, factory: bool) -> None:
    """Dtype, device and layout keyword arguments of factory-like ops (edits ``kwargs``)."""
    if has_dtype and kwargs.get("dtype") is not None and kwargs["dtype"] not in ALLOWED_DTYPES:
        refuse_dtype(name, kwargs["dtype"])
    if factory and kwargs.get("device") is not None:
        kwargs["device"] = _CPU
    layout = kwargs.get("layout")
    if layout is not None and layout != torch.strided:
        state.refuse(UnsupportedFeatureError(f"{name}: trnsim has no {layout} tensors", op=name, feature="sparse"))
        kwargs["layout"] = torch.strided


def host_call(op: Callable[..., Any], name: str, *args: Any, **kwargs: Any) -> Any:
    """Run ``op`` on CPU views of trnsim arguments and map results back (special kernels)."""
    keep: dict[int, Tensor] = {}
    cargs = [_unwrap(a, name, keep) for a in args]
    ckw = {k: _unwrap(v, name, keep) for k, v in kwargs.items()}
    return _rewrap(op(*cargs, **ckw), name, keep)
