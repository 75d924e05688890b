"""What a vendor compiler does to an aten graph before it judges an op.

* Non-op nodes never reach the lowering and are never named as ops: runtime asserts
  (``aten._assert_*``, ``sym_constrain_range*``), device placement (``prims.device_put``:
  StableHLO has no devices), symbolic size queries (``sym_size.int`` ...) and Python
  builtins (``operator.getitem``) are graph plumbing, not work for the chip.
* Slice bounds are canonical: ``slice``/``slice_scatter`` with ``end=INT64_MAX`` (what
  ``x[..., k:]`` and its backward emit) or past the dimension are clamped to the dimension
  size, negative starts and ends are normalised. Torch-MLIR fails on the raw form
  (``std::bad_alloc`` for ``slice_scatter``) and lowers the canonical one.
"""

from __future__ import annotations

import operator
from typing import Any

import torch

# Schema names (``namespace::name``) of nodes that are not work for the chip.
_NON_OPS: frozenset[str] = frozenset({
    "aten::_assert_async",
    "aten::_assert_scalar",
    "aten::_assert_tensor_metadata",
    "aten::_functional_assert_async",
    "aten::_functional_assert_scalar",
    "aten::_functional_sym_constrain_range",
    "aten::_functional_sym_constrain_range_for_size",
    "aten::sym_constrain_range",
    "aten::sym_constrain_range_for_size",
    "aten::_print",
    "aten::sym_size",
    "aten::sym_numel",
    "aten::sym_stride",
    "aten::sym_storage_offset",
    "aten::sym_is_contiguous",
    "prims::device_put",
})
_ASSERTS = frozenset(n for n in _NON_OPS if "assert" in n or "constrain_range" in n or n == "aten::_print")
_SLICES = ("aten::slice", "aten::slice_scatter")


def is_non_op(target: Any) -> bool:
    """Whether an FX node target (or an ``aten::name[.overload]`` string) is graph
    plumbing rather than an op: asserts, device placement, size queries, builtins."""
    if isinstance(target, str):
        return target.split(".", 1)[0] in _NON_OPS
    if isinstance(target, torch._ops.OpOverload):
        return target._schema.name in _NON_OPS
    module = getattr(target, "__module__", None) or ""
    # operator.getitem and friends, math.*, torch.sym_float / sym_not / _sym_sqrt ...
    return target is operator.getitem or module in ("_operator", "operator", "math", "builtins") or \
        getattr(target, "__name__", "").startswith(("sym_", "_sym_"))


def canonicalize(gm: torch.fx.GraphModule) -> None:
    """Drop non-op nodes and canonicalise slice bounds of ``gm`` in place."""
    for node in list(gm.graph.nodes):
        if node.op != "call_function" or not isinstance(node.target, torch._ops.OpOverload):
            continue
        name = node.target._schema.name
        if name == "prims::device_put":
            node.replace_all_uses_with(node.args[0])
            gm.graph.erase_node(node)
        elif name in _ASSERTS and not node.users:
            gm.graph.erase_node(node)
        elif name in ("aten::sym_size", "aten::sym_numel", "aten::sym_stride", "aten::sym_storage_offset"):
            _fold_size(gm, node)
        elif name in _SLICES:
            _canonical_slice(node)


def _fold_size(gm: torch.fx.GraphModule, node: torch.fx.Node) -> None:
    """A size query with a static answer becomes that number (static shapes only)."""
    value = node.meta.get("val")
    if isinstance(value, torch.SymInt) and value.node.is_constant():
        value = int(value)
    if isinstance(value, int) and not isinstance(value, bool):
        node.replace_all_uses_with(value)  # type: ignore[arg-type]
        gm.graph.erase_node(node)


def _canonical_slice(node: torch.fx.Node) -> None:
    """``slice(self, dim, start, end, step)`` / ``slice_scatter(self, src, dim, start, end,
    step)`` with 0 <= start <= end <= size and a non-negative dim."""
    first = 2 if node.target._schema.name == "aten::slice_scatter" else 1
    schema_args = node.target._schema.arguments
    names = [a.name for a in schema_args]
    bound = {a.name: (node.args[i] if i < len(node.args) else node.kwargs.get(a.name, a.default_value))
             for i, a in enumerate(schema_args)}
    val = getattr(node.args[0], "meta", {}).get("val")
    if not isinstance(val, torch.Tensor):
        return
    dim, start, end = bound.get("dim", 0), bound.get("start"), bound.get("end")
    if not all(isinstance(v, int) or v is None for v in (dim, start, end)) or not isinstance(dim, int):
        return  # symbolic bounds: nothing static to canonicalise
    dim = dim + val.dim() if dim < 0 else dim
    size = val.shape[dim]
    if not isinstance(size, int):
        return
    start = 0 if start is None else (start + size if start < 0 else start)
    end = size if end is None else (end + size if end < 0 else end)
    start, end = min(max(start, 0), size), min(max(end, 0), size)
    end = max(end, start)
    step = bound.get("step", 1)
    new_args = list(node.args[:first]) + [dim, start, end, 1 if step is None else step]
    node.args = tuple(new_args)
    node.kwargs = {k: v for k, v in node.kwargs.items() if k not in names[first:]}
