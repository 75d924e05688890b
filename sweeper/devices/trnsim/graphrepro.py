"""Reproducers of lowering-tool failures no single op explains: the whole graph.

When Torch-MLIR fails on a graph without naming an op (an importer exception, a pass that
fails a verifier, ops that lower alone but not together), ``write_graph_reproducer`` writes
``<dir>/graph-<key>.py``: a standalone script that rebuilds the prepared graph node by node
(input shapes, strides and dtypes, scalar arguments, the values of tensor constants) and
imports it to StableHLO, exiting 1 with the diagnostic when the failure reproduces. ``key``
starts the graph's hash (``graphkey``): the same failing graph met in many models is one
file. Beside it, ``graph-<key>.mlir`` holds the graph's torch-dialect MLIR (the input of the
failing pipeline, for ``torch-mlir-opt``), when Torch-MLIR can import it at all.
"""

from __future__ import annotations

import operator
from pathlib import Path

import torch

from sweeper.devices.trnsim.isolate import Overrun, run_isolated
from sweeper.devices.trnsim.lowering import MEMORY_BYTES, TIMEOUT_S, tool_version
from sweeper.devices.trnsim.reproducer import MAIN_SOURCE, _check, _literal, _NotWritable, write_mlir, write_outcome

# Constants up to this many elements are written into the script as literals.
MAX_CONSTANT_NUMEL = 1 << 16

_TEMPLATE = '''"""Torch-MLIR fails to lower this graph to StableHLO, and no single op of it fails alone.

Found by the sweeper's trnsim compile stage ({where}); torch {torch_version}, Torch-MLIR {tool_version}.
{summary}
The graph as the compiler received it: input shapes and dtypes, every node's arguments,
the values of its tensor constants. Run: python {filename}
(exit 1 and the diagnostic when the failure reproduces, 0 when it lowers)
"""

import operator
import sys

import torch
from torch._subclasses.fake_tensor import FakeTensorMode

class Builder:
    """Builds the FX graph node by node, each node's ``meta["val"]`` computed on fake tensors."""

    def __init__(self):
        self.root, self.graph, self.mode = torch.nn.Module(), torch.fx.Graph(), FakeTensorMode()

    def inp(self, name, shape, stride, dtype):
        node = self.graph.placeholder(name)
        with self.mode:
            node.meta["val"] = torch.empty_strided(shape, stride, dtype=dtype)
        return node

    def const(self, name, value):
        setattr(self.root, name, value)
        node = self.graph.get_attr(name)
        node.meta["val"] = self.mode.from_tensor(value)
        return node

    def call(self, target, args, kwargs):
        node = self.graph.call_function(target, args, kwargs)
        fake = lambda value: torch.fx.node.map_arg(value, lambda n: n.meta["val"])  # noqa: E731
        with self.mode:
            node.meta["val"] = target(*fake(args), **fake(kwargs))
        return node


def build() -> torch.fx.GraphModule:
    """The graph, with the ``meta["val"]`` Torch-MLIR's importer reads."""
    B = Builder()
    P = []
{body}
    return torch.fx.GraphModule(B.root, B.graph)
'''
_TEMPLATE += "\n\n" + MAIN_SOURCE


def _target(target: object) -> str:
    """Python source naming a call target (an aten/prims overload or ``operator.getitem``)."""
    if target is operator.getitem:
        return "operator.getitem"
    if isinstance(target, torch._ops.OpOverload):
        return f"torch.ops.{target.namespace}.{target._opname}.{target._overloadname}"
    raise _NotWritable(str(target))


def _constant(gm: torch.fx.GraphModule, node: torch.fx.Node) -> str:
    """Source for a ``get_attr`` tensor constant, with its values."""
    value = gm
    for part in str(node.target).split("."):
        value = getattr(value, part)
    if not isinstance(value, torch.Tensor) or value.is_meta or value.numel() > MAX_CONSTANT_NUMEL:
        raise _NotWritable(f"constant {node.target}")
    data = value.detach().to("cpu")
    if data.dtype in (torch.bfloat16, torch.float16):  # .tolist() gives floats; keep the dtype
        spelled = f"torch.tensor({data.float().tolist()!r}).to({data.dtype!r})"
    else:
        spelled = f"torch.tensor({data.tolist()!r}, dtype={data.dtype!r})"
    return f"B.const({node.name!r}, {spelled})"


def _line(gm: torch.fx.GraphModule, node: torch.fx.Node, built: list[torch.fx.Node]) -> str:
    """One line of ``build()`` for ``node`` (``P`` holds the nodes built so far)."""
    if node.op == "placeholder":
        val = node.meta.get("val")
        if not isinstance(val, torch.Tensor) or not all(isinstance(s, int) for s in (*val.shape, *val.stride())):
            raise _NotWritable(f"input {node.name}")
        return f"B.inp({node.name!r}, {tuple(val.shape)!r}, {tuple(val.stride())!r}, {val.dtype!r})"
    if node.op == "get_attr":
        return _constant(gm, node)
    if node.op == "call_function":
        kwargs = "{" + ", ".join(f"{k!r}: {_literal(v, built)}" for k, v in node.kwargs.items()) + "}"
        return f"B.call({_target(node.target)}, {_literal(tuple(node.args), built)}, {kwargs})"
    raise _NotWritable(node.op)


def graph_script(gm: torch.fx.GraphModule, *, where: str, summary: str, filename: str) -> str | None:
    """The reproducer's source for the whole of ``gm`` (a prepared graph), or None when
    part of it cannot be written down (symbolic sizes, opaque targets, large constants)."""
    built: list[torch.fx.Node] = []
    lines = []
    try:
        for node in gm.graph.nodes:
            if node.op == "output":
                lines.append(f"B.graph.output({_literal(node.args[0], built)})")
                continue
            lines.append(f"P.append({_line(gm, node, built)})")
            built.append(node)
    except (_NotWritable, AttributeError):
        return None
    body = "\n".join(f"    {line}" for line in lines)
    summary = summary.replace("\\", "/").replace('"""', "'''")
    return _TEMPLATE.format(where=where, torch_version=torch.__version__, tool_version=tool_version(), summary=summary,
                            filename=filename,
                            body=body)


_UNBUILDABLE = "GraphNotRebuilt"


class GraphNotRebuilt(Exception):
    """The script's ``build()`` failed: it does not rebuild the graph, so it reproduces nothing."""


def _reproduces(source: str) -> tuple[bool, str, str]:
    """``reproducer._check`` for a whole-graph script, telling a script that cannot
    rebuild its graph (raises ``GraphNotRebuilt``) from one whose graph fails to lower."""
    namespace: dict[str, object] = {"__name__": "trnsim_repro"}
    try:
        exec(compile(source, "<reproducer>", "exec"), namespace)  # noqa: S102 - our own generated source
        namespace["build"]()  # type: ignore[operator]
    except Exception as exc:  # noqa: BLE001
        raise GraphNotRebuilt(f"{type(exc).__name__}: {exc}") from None
    return _check(source)


def write_graph_reproducer(gm: torch.fx.GraphModule, key: str, directory: str | Path, *, where: str,
                           summary: str) -> Path | None:
    """Write ``<directory>/graph-<key[:12]>.py`` (and ``.mlir``) for a prepared graph that
    fails to lower; the script's path, or None when the graph cannot be written down or
    the script does not reproduce the failure."""
    stem = f"graph-{key[:12]}"
    folder = Path(directory)
    path = folder / f"{stem}.py"
    if path.exists():  # the same graph met again (another model, a recompile): one file
        return path
    source = graph_script(gm, where=where, summary=summary, filename=path.name)
    if source is None:
        return None
    try:
        fails, mlir, said = run_isolated(lambda: _reproduces(source), timeout=TIMEOUT_S, extra_memory=MEMORY_BYTES)
    except Overrun as exc:  # the tool ran away on the rebuilt graph: that reproduces too
        fails, mlir, said = not str(exc).startswith(_UNBUILDABLE), "", f"lowering aborted: {exc}"
    if not fails:
        return None
    folder.mkdir(parents=True, exist_ok=True)
    path.write_text(source)
    write_outcome(path, said)
    if mlir:
        write_mlir(folder / f"{stem}.mlir", mlir)
    return path
