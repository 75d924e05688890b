"""An aten FX graph as bytes another process can lower: what Torch-MLIR's importer reads.

The importer types a graph from each node's ``val`` (a fake tensor: shape, stride, dtype),
its ``tensor_meta`` and ``stack_trace`` (locations in diagnostics), reads the values of the
tensor constants a ``get_attr`` names, and nothing else. ``encode`` keeps exactly that;
``decode`` rebuilds the graph with fake tensors of the same shape, stride, offset and dtype.

A graph the wire cannot carry faithfully gets ``None`` from ``encode`` and is lowered where
it is (a forked child, as before): targets other than ``aten``/``prims`` op overloads and
``getitem`` (a library's custom ops exist only where the library was imported), arguments
of an unknown type, constants without readable contents, and
``as_strided`` (the importer rewrites it from the storage its input views, which a rebuilt
fake tensor does not share).
"""

from __future__ import annotations

import operator
import pickle
from typing import Any

import torch

# Node meta the importer reads (``torch_mlir.extras.fx_importer``).
_META_KEYS = ("tensor_meta", "stack_trace")
_SCALARS = (int, float, bool, complex, str, type(None), torch.dtype, torch.layout, torch.memory_format, torch.device)
_STORAGE_OPS = ("as_strided",)
# Op namespaces torch registers when it is imported. A library's custom ops
# (``transformers::grouped_mm_fallback``) exist only in a process that imported it.
_CORE_NAMESPACES = ("aten", "prims")


class Unwirable(Exception):
    """Something in the graph the wire does not carry."""


def encode(gm: torch.fx.GraphModule) -> bytes | None:
    """``gm`` (a prepared graph: ``lowering.prepare``) as bytes, or ``None`` when it holds
    something the wire does not carry (the caller lowers it in place instead)."""
    try:
        nodes = [_node(gm, node) for node in gm.graph.nodes]
        return pickle.dumps(nodes, protocol=pickle.HIGHEST_PROTOCOL)
    except Exception:  # noqa: BLE001 - Unwirable, or anything unforeseen: lowered in place, as before
        return None


def decode(data: bytes) -> torch.fx.GraphModule:
    """The graph ``encode`` wrote, its values fake tensors (of this process's one fake mode)."""
    from torch._subclasses.fake_tensor import FakeTensorMode

    mode = _MODE.get("mode")
    if mode is None:  # one for the process: making a mode per graph was a tenth of decoding
        mode = _MODE["mode"] = FakeTensorMode()
    made: dict[Any, Any] = {}
    graph = torch.fx.Graph()
    env: dict[str, torch.fx.Node] = {}
    constants: dict[str, torch.Tensor] = {}
    for op, name, target, args, kwargs, val, meta, constant in pickle.loads(data):
        if op == "get_attr":
            constants[target] = constant
        resolved = _target(target) if op == "call_function" else target
        node = graph.create_node(op, resolved, _unwire(args, env), _unwire(kwargs, env), name=name)
        # The name is taken as given: the importer's value names and locations follow it.
        node.name = name
        node.meta.update(meta)
        if val is not _ABSENT:
            node.meta["val"] = _fake(val, mode, made)
        env[name] = node
    root = torch.nn.Module()
    for target, constant in constants.items():
        _set_attr(root, target, constant)
    return graph_module(root, graph)


def graph_module(root: torch.nn.Module, graph: torch.fx.Graph) -> torch.fx.GraphModule:
    """A GraphModule over ``graph`` whose Python code is generated on first use only."""
    try:
        from torch.fx._lazy_graph_module import _LazyGraphModule
    except ImportError:  # an older or newer torch without it: eager code generation
        return torch.fx.GraphModule(root, graph)
    return _LazyGraphModule(root, graph)


_MODE: dict[str, Any] = {}


class _Absent:
    def __reduce__(self) -> str:
        return "_ABSENT"


_ABSENT = _Absent()


def _node(gm: torch.fx.GraphModule, node: torch.fx.Node) -> tuple[Any, ...]:
    target: Any = node.target
    constant = None
    if node.op == "call_function":
        target = _wire_target(node.target)
    elif node.op == "get_attr":
        constant = _constant(gm, str(node.target))
    elif node.op not in ("placeholder", "output"):
        raise Unwirable(node.op)
    val = node.meta["val"] if "val" in node.meta else _ABSENT
    meta = {key: node.meta[key] for key in _META_KEYS if key in node.meta}
    return (node.op, node.name, target, _wire(node.args), _wire(node.kwargs),
            _ABSENT if val is _ABSENT else _spec(val), meta, constant)


def _wire_target(target: Any) -> tuple[str, ...]:
    if target is operator.getitem:
        return ("getitem",)
    if isinstance(target, torch._ops.OpOverload):
        namespace, name = target._schema.name.split("::", 1)
        if namespace not in _CORE_NAMESPACES:
            raise Unwirable(f"{namespace}::{name} is registered by a library the server has not imported")
        if name in _STORAGE_OPS:
            raise Unwirable(name)
        return ("op", namespace, name, target._overloadname)
    raise Unwirable(repr(target))


def _target(wired: tuple[str, ...]) -> Any:
    if wired[0] == "getitem":
        return operator.getitem
    _, namespace, name, overload = wired
    return getattr(getattr(getattr(torch.ops, namespace), name), overload)


def _wire(value: Any) -> Any:
    """Arguments with nodes as ``("node", name)`` references."""
    if isinstance(value, torch.fx.Node):
        return _NodeRef(value.name)
    if isinstance(value, (list, tuple)):
        items = [_wire(item) for item in value]
        return items if isinstance(value, list) else tuple(items)
    if isinstance(value, dict):
        return {key: _wire(item) for key, item in value.items()}
    if isinstance(value, _SCALARS):
        return value
    raise Unwirable(type(value).__name__)


def _unwire(value: Any, env: dict[str, torch.fx.Node]) -> Any:
    if isinstance(value, _NodeRef):
        return env[value.name]
    if isinstance(value, list):
        return [_unwire(item, env) for item in value]
    if isinstance(value, tuple):
        return tuple(_unwire(item, env) for item in value)
    if isinstance(value, dict):
        return {key: _unwire(item, env) for key, item in value.items()}
    return value


class _NodeRef:
    __slots__ = ("name",)

    def __init__(self, name: str) -> None:
        self.name = name

    def __getstate__(self) -> str:
        return self.name

    def __setstate__(self, name: str) -> None:
        self.name = name


def _spec(val: Any) -> Any:
    """A node's value as (shape, stride, offset, dtype) for tensors, nested as it is."""
    if isinstance(val, torch.Tensor):
        if val.layout != torch.strided or any(isinstance(s, torch.SymInt) for s in (*val.shape, *val.stride())):
            raise Unwirable("a tensor value without static strides")
        return _TensorSpec((tuple(val.shape), tuple(val.stride()), int(val.storage_offset()), val.dtype))
    if isinstance(val, (list, tuple)):
        items = [_spec(item) for item in val]
        return items if isinstance(val, list) else tuple(items)
    if isinstance(val, (torch.SymInt, torch.SymFloat, torch.SymBool)):
        raise Unwirable("a symbolic value")
    if isinstance(val, _SCALARS):
        return val
    raise Unwirable(type(val).__name__)


class _TensorSpec(tuple):
    __slots__ = ()


def _fake(spec: Any, mode: Any, made: dict[Any, Any]) -> Any:
    """A fake tensor for a spec (one per distinct spec: the importer reads shape, stride and
    dtype only, and making fake tensors was most of the decoding time)."""
    if isinstance(spec, _TensorSpec):
        fake = made.get(spec)
        if fake is None:
            shape, stride, offset, dtype = spec
            with mode:
                if offset:
                    size = 1 + offset + sum((n - 1) * s for n, s in zip(shape, stride)) if all(shape) else offset
                    fake = torch.empty(max(size, 1), dtype=dtype).as_strided(shape, stride, offset)
                else:
                    fake = torch.empty_strided(shape, stride, dtype=dtype)
            made[spec] = fake
        return fake
    if isinstance(spec, list):
        return [_fake(item, mode, made) for item in spec]
    if isinstance(spec, tuple):
        return tuple(_fake(item, mode, made) for item in spec)
    return spec


def _constant(gm: torch.fx.GraphModule, target: str) -> Any:
    """A ``get_attr`` value, tensors as real CPU tensors (the importer reads their values)."""
    from torch._subclasses.fake_tensor import FakeTensor, unset_fake_temporarily

    value: Any = gm
    for part in target.split("."):
        if not hasattr(value, part):
            raise Unwirable(f"no attribute {target}")
        value = getattr(value, part)
    if isinstance(value, torch.Tensor):
        if isinstance(value, FakeTensor) or value.is_meta or value.layout != torch.strided:
            raise Unwirable("a constant without readable contents")
        with unset_fake_temporarily(), torch.no_grad():
            return value.detach().to("cpu").clone()
    if isinstance(value, _SCALARS):
        return value
    raise Unwirable(type(value).__name__)


def _set_attr(root: torch.nn.Module, target: str, value: Any) -> None:
    *path, last = target.split(".")
    owner = root
    for part in path:
        if not hasattr(owner, part):
            owner.add_module(part, torch.nn.Module())
        owner = getattr(owner, part)
    setattr(owner, last, value)
