"""Checks of captured graphs against the profile: dtypes, op policies, symbolic shapes."""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from typing import Any

import torch
import torch.utils._pytree as pytree
from torch.utils._python_dispatch import TorchDispatchMode

import sweeper.devices.trnsim.state as state
from sweeper.devices.trnsim.canonical import is_non_op
from sweeper.devices.trnsim.errors import (
    DynamicShapeError,
    UnsupportedDtypeError,
    UnsupportedOpError,
)
from sweeper.devices.trnsim.lowering import op_name
from sweeper.devices.trnsim.profile import Profile


def symbolic_inputs(gm: torch.fx.GraphModule, example_inputs: Sequence[Any]) -> bool:
    """Whether the graph was captured with symbolic shapes."""
    for value in example_inputs:
        if isinstance(value, torch.SymInt):
            return True
        if isinstance(value, torch.Tensor) and any(isinstance(s, torch.SymInt) for s in value.shape):
            return True
    for node in gm.graph.nodes:
        if node.op == "placeholder":
            val = node.meta.get("example_value")
            if isinstance(val, torch.SymInt) or (isinstance(val, torch.Tensor) and
                                                 any(isinstance(s, torch.SymInt) for s in val.shape)):
                return True
    return False


class _OpScan(TorchDispatchMode):
    """Collects the aten ops a graph dispatches (before any Python decomposition), noting
    which produce data-dependent output shapes."""

    def __init__(self) -> None:
        super().__init__()
        self.ops: dict[str, bool] = {}

    def __torch_dispatch__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
        from torch.fx.experimental.symbolic_shapes import free_unbacked_symbols

        out = func(*args, **(kwargs or {}))
        if is_non_op(func):
            return out  # size queries, asserts, placement: not ops to judge
        name = op_name(func)
        leaves = [x for x in pytree.tree_leaves(out) if isinstance(x, (torch.Tensor, torch.SymInt))]
        self.ops[name] = self.ops.get(name, False) or any(free_unbacked_symbols(x) for x in leaves)
        return out


def eager_ops(gm: torch.fx.GraphModule, example_inputs: Sequence[Any]) -> dict[str, bool]:
    """Aten ops the Dynamo graph reaches when run eagerly (replayed on fake tensors), each
    with whether its output shape depends on data."""
    from torch._subclasses.fake_tensor import (
        DynamicOutputShapeException,
        FakeTensorMode,
    )
    from torch.fx.experimental.symbolic_shapes import ShapeEnv

    # A private fake mode: Dynamo's own one carries guards this replay must not add to.
    fake_mode = FakeTensorMode(allow_non_fake_inputs=True, shape_env=ShapeEnv())
    with fake_mode:
        inputs = [fake_mode.from_tensor(x) if isinstance(x, torch.Tensor) and not _is_fake(x) else x
                  for x in example_inputs]
    scan = _OpScan()
    try:
        with fake_mode, scan, torch.no_grad():
            torch.fx.Interpreter(gm).run(*inputs)
    except DynamicOutputShapeException as exc:
        if not is_non_op(exc.func):
            scan.ops[op_name(exc.func)] = True
    except Exception as exc:  # noqa: BLE001 - a replay failure must not hide the graph: AOT checks it too
        state.note_compile_problem(f"pre-decomposition scan incomplete: {type(exc).__name__}: {exc}"[:300])
    return scan.ops


def _is_fake(x: torch.Tensor) -> bool:
    from torch._subclasses.fake_tensor import FakeTensor

    return isinstance(x, FakeTensor)


def refuse_data_dependent(ops: dict[str, bool], profile: Profile) -> None:
    """Refuse ops with data-dependent output shapes unless the profile allows dynamic shapes."""
    if profile.allows("dynamic_shapes"):
        return
    for name, dependent in ops.items():
        if dependent:
            _refuse(DynamicShapeError(f"{name} has a data-dependent output shape; trnsim compiles static shapes only",
                                      op=name, feature="dynamic_shapes"))


def refuse_ops(ops: Iterable[str], profile: Profile) -> None:
    """Apply the compile policy to ops (refuse ``error``, note ``fallback``)."""
    for name in ops:
        if is_non_op(name):
            continue
        policy = profile.policy(name, "compile")
        if policy == "error":
            family = profile.families.get(name) or profile.families.get(name.split(".", 1)[0], "")
            _refuse(UnsupportedOpError(f"{name} has no trnsim compiler lowering ({family})", op=name))
        elif policy == "fallback":
            state.note_compile_problem(f"{name} runs on the host inside the compiled graph")


def check_graph(gm: torch.fx.GraphModule, kind: str, profile: Profile) -> None:
    """Check every node of an aten graph: output dtypes, op policy, data-dependent shapes.

    Non-op nodes (``sym_size.int``, asserts, ``device_put``) are never named as ops: a size
    query of a data-dependent shape blames the op that made the shape, refused before it.
    """
    from torch.fx.experimental.symbolic_shapes import free_unbacked_symbols

    dynamic_refused = False
    for node in gm.graph.nodes:
        val = node.meta.get("val")
        is_op = node.op == "call_function" and isinstance(node.target, torch._ops.OpOverload) and \
            not is_non_op(node.target)
        name = op_name(node.target) if is_op else None
        if not profile.allows("dynamic_shapes") and node.op == "call_function" and val is not None and \
                free_unbacked_symbols(val) and (is_op or not dynamic_refused):
            dynamic_refused = True
            what = name or "a size that depends on tensor data"
            _refuse(DynamicShapeError(f"{kind} graph: {what} has a data-dependent output shape",
                                      op=name, feature="dynamic_shapes"))
        if name is not None:
            refuse_ops([name], profile)
        for t in val if isinstance(val, (list, tuple)) else [val]:
            if isinstance(t, torch.Tensor) and t.dtype not in profile.dtypes:
                _refuse(UnsupportedDtypeError(f"{kind} graph: {name or node.name} produces {t.dtype}, which trnsim lacks"
                                              f"{module_of(node)}", op=name, dtype=str(t.dtype)))


def module_of(node: torch.fx.Node) -> str:
    """`` (in module rotary_emb: FluxPosEmbed)``: the innermost model module whose code made
    the node, as Dynamo recorded it, so a dtype gap names the code that needs it; '' when the
    graph does not say."""
    stack = node.meta.get("nn_module_stack") or {}
    if not stack:
        return ""
    path, cls = list(stack.values())[-1]
    qualname = getattr(cls, "__name__", None) or str(cls).rsplit(".", 1)[-1].strip("'>")
    return f" (in module {dotted_module_path(str(path))}: {qualname})"


# A step into a submodule as Dynamo may spell it when it traces ``Module.__getattr__``
# itself (``.__dict__['_modules']['encoder']``, ``._modules['encoder']``) or indexes a
# container (``[0]``): each reads as the attribute path a user writes.
_MODULE_STEP = re.compile(r"""\.(?:__dict__\[['"]_modules['"]\]|_modules)\[['"]([^'"]+)['"]\]""")
_INDEX_STEP = re.compile(r"\[(\d+)\]")
# The compiled frame's local the path starts from (``L['self']`` for a model's forward).
_ROOT = re.compile(r"""^L\[['"][^'"]+['"]\]""")


def dotted_module_path(source: str) -> str:
    """A submodule's path as ``model.encoder.layers.0.attn`` from the source name Dynamo
    records in ``nn_module_stack`` (``L['self'].model.encoder``, or after some models in a
    process ``L['self'].__dict__['_modules']['model']...``); ``the model`` for the root."""
    path = _ROOT.sub("", source)
    path = _INDEX_STEP.sub(r".\1", _MODULE_STEP.sub(r".\1", path))
    return path.lstrip(".") or "the model"


def _refuse(exc: Any) -> None:
    state.note_compile_problem(f"{exc.reason_kind.value}: {exc}")
    state.refuse(exc)
