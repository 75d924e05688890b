"""Lowering captured aten graphs to StableHLO with Torch-MLIR.

A graph that fails to legalize is a real compiler verdict. The MLIR diagnostics usually
name the op (``torch.aten._unsafe_index.Tensor``); when they only name an MLIR-level
construct (``torch.constant.int``), each node is lowered on its own to find the aten op to
blame. AOT graphs need clean-ups before import (``prepare``): ``None`` outputs (gradients of
inputs that need none) have no StableHLO type, and device placement has no meaning there.
"""

from __future__ import annotations

import dataclasses
import functools
import operator
import os
import re
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch

import sweeper.devices.trnsim.lowerserver as lowerserver
import sweeper.devices.trnsim.phases as phases
from sweeper.devices.trnsim import graphwire, lowercache
from sweeper.devices.trnsim.canonical import canonicalize, is_non_op
from sweeper.devices.trnsim.graphkey import LRU, graph_key
from sweeper.devices.trnsim.isolate import Overrun, run_isolated

_OP_IN_DIAG = re.compile(r"torch\.aten\.([A-Za-z0-9_]+(?:\.[A-Za-z0-9_]+)?)")


@dataclass(frozen=True)
class LoweringResult:
    """Outcome of one lowering: ``ok`` with the StableHLO text, or the failing op and the
    tool's full diagnostic (``message``; ``summary`` is its telling line)."""

    ok: bool
    op: str | None = None
    message: str = ""
    stablehlo: str = ""
    summary: str = ""


# The torch (major.minor) the Torch-MLIR release on PyPI (20261001) was built for. Its FX
# importer reads torch's private graph and op schemas: beside another torch it imports but
# misreads graphs, so a lowering failure there would be no verdict on the model.
TORCH_MLIR_TORCH = ("2.13",)


def available() -> bool:
    """Whether Torch-MLIR can judge lowering here (installed, and built for this torch)."""
    return unavailable_reason() is None


@functools.lru_cache(maxsize=1)
def unavailable_reason() -> str | None:
    """Why graphs are not lowered here (the compile stage records it), or None."""
    torch_version = torch.__version__.split("+")[0]
    if ".".join(torch_version.split(".")[:2]) not in TORCH_MLIR_TORCH:
        return (f"Torch-MLIR here is built for torch {', '.join(TORCH_MLIR_TORCH)}, this is torch {torch_version}: "
                "install torch 2.13 for lowering verdicts")
    try:
        import torch_mlir.fx  # noqa: F401
    except ImportError:
        return "torch-mlir is not installed (pip install 'sweeper[lowering]')"
    return None


@functools.lru_cache(maxsize=1)
def tool_version() -> str:
    """The installed Torch-MLIR's version (``20261001``), or ``absent``: records, sweep.json
    and every reproducer name it, since an upstream bug report starts from it."""
    from importlib import metadata

    try:
        return metadata.version("torch-mlir")
    except metadata.PackageNotFoundError:
        return "absent"


def decomposition_table() -> dict:
    """The decompositions Torch-MLIR's StableHLO path expects (core ATen without it)."""
    try:
        from torch_mlir.extras.fx_decomp_util import get_decomposition_table
    except ImportError:
        from torch._decomp import core_aten_decompositions

        return dict(core_aten_decompositions())
    return dict(get_decomposition_table())


def prepare(gm: torch.fx.GraphModule) -> torch.fx.GraphModule:
    """A copy of ``gm`` ready for import: tensor outputs only, no device placement, no
    non-op nodes, canonical slice bounds (``canonical.canonicalize``).

    Factory nodes carry ``device=trnsim:0``, which Torch-MLIR cannot import (StableHLO has
    no devices; placement is the runtime's business), so it is dropped.
    """
    # Copy the graph only: the module's tensors (trnsim parameters) stay shared. Lazy: the
    # importer reads the graph, never the Python code, which is generated only if asked for
    # (a reproducer); generating it twice per graph was a third of this function's time.
    graph = torch.fx.Graph()
    out_value = graph.graph_copy(gm.graph, {})
    graph.output(out_value)
    gm = graphwire.graph_module(gm, graph)
    canonicalize(gm)
    for node in gm.graph.nodes:
        if isinstance(node.kwargs.get("device"), torch.device):
            node.kwargs = {k: v for k, v in node.kwargs.items() if k not in ("device", "pin_memory")}
    out = next(n for n in gm.graph.nodes if n.op == "output")
    values = out.args[0]
    if isinstance(values, (list, tuple)):
        out.args = (tuple(v for v in values if isinstance(v, torch.fx.Node)),)
    gm.graph.eliminate_dead_code()
    gm.recompile()
    return gm


def _import(gm: torch.fx.GraphModule, name: str) -> tuple[str | None, list[str]]:
    """StableHLO text (or None) and the MLIR diagnostics of one import."""
    from torch_mlir import ir
    from torch_mlir.compiler_utils import OutputType
    from torch_mlir.dialects import torch as torch_d
    from torch_mlir.extras.fx_importer import FxImporter
    from torch_mlir.fx import stateless_fx_import

    ctx = ir.Context()
    torch_d.register_dialect(ctx)
    diagnostics: list[str] = []

    def handler(diag: object) -> bool:
        diagnostics.append(str(diag))
        return True  # handled: keep MLIR from printing to stderr

    ctx.attach_diagnostic_handler(handler)
    try:
        module = stateless_fx_import(gm, output_type=OutputType.STABLEHLO, fx_importer=FxImporter(context=ctx),
                                     model_name=name)
    except Exception as exc:  # noqa: BLE001 - Torch-MLIR reports legalization failures as exceptions
        return None, diagnostics + [f"{type(exc).__name__}: {exc}"]
    return str(module), diagnostics


# Limits for one lowering (seconds, extra bytes); a runaway pipeline is a compile error.
TIMEOUT_S = float(os.environ.get("TRNSIM_LOWERING_TIMEOUT", "120"))
MEMORY_BYTES = int(float(os.environ.get("TRNSIM_LOWERING_MEMORY_GB", "4")) * (1 << 30))
# A single-op probe (``blame``) has placeholder inputs and needs far less than a whole
# graph: a probe that runs away (e.g. ``slice_scatter`` to the end of a dimension) is
# stopped at this lower limit, seconds sooner, with the same op blamed.
PROBE_MEMORY_BYTES = int(float(os.environ.get("TRNSIM_PROBE_MEMORY_GB", "1")) * (1 << 30))
# All the probes of one ``blame`` together (seconds): host-side work with a budget of its own,
# so a graph of many ops cannot spend a model's whole timeout on finding whom to blame.
BLAME_TIMEOUT_S = float(os.environ.get("TRNSIM_BLAME_TIMEOUT", "60"))


def _preload() -> None:
    """Import Torch-MLIR in this process, so each forked lowering starts with it loaded."""
    if "torch_mlir.fx" in sys.modules:
        return
    with phases.phase("import_mlir"):
        import torch_mlir.compiler_utils
        import torch_mlir.extras.fx_importer
        import torch_mlir.fx  # noqa: F401


def _timed_isolated(fn: Callable[[], Any], phase: str, *, timeout: float, extra_memory: int) -> Any:
    """``fn()`` under the lowering limits; the child's own time is charged to ``phase``,
    the rest (fork, transfer, reaping) to ``isolate``."""
    def timed() -> tuple[Any, float, float]:
        wall0, cpu0 = time.perf_counter(), time.process_time()
        value = fn()
        return value, time.perf_counter() - wall0, time.process_time() - cpu0

    _preload()
    with phases.phase("isolate"):
        value, wall, cpu = run_isolated(timed, timeout=timeout, extra_memory=extra_memory)
        phases.add(phase, wall, cpu, other_process=True)
    return value


def _timed_served(data: bytes, phase: str, name: str, *, timeout: float, extra_memory: int) -> Any:
    """``_import`` of a ``graphwire`` graph in the lowering server, under the same limits;
    its own time is charged to ``phase``, the rest (encoding, the pipe) to ``isolate``.
    ``RuntimeError`` when no server can run here."""
    with phases.phase("isolate"):
        value, wall, cpu = lowerserver.lower(data, name, timeout=timeout, extra_memory=extra_memory)
        phases.add(phase, wall, cpu, other_process=True)
    return value


def _wired(gm: torch.fx.GraphModule) -> bytes | None:
    """``gm`` for the lowering server, or None (no server here, or the graph does not travel)."""
    if not lowerserver.usable():
        return None
    with phases.phase("isolate"):
        return graphwire.encode(gm)


def _import_isolated(gm: torch.fx.GraphModule, name: str, timeout: float) -> tuple[str | None, list[str]]:
    """``_import`` away from this process: in the lowering server when the graph travels
    there, else in a forked child."""
    try:
        data = _wired(gm)
        if data is not None:
            try:
                return _timed_served(data, f"lower.{name}", name, timeout=timeout, extra_memory=MEMORY_BYTES)
            except RuntimeError:
                pass  # no server can run here: a forked child, as below
        return _timed_isolated(lambda: _import(gm, name), f"lower.{name}", timeout=timeout, extra_memory=MEMORY_BYTES)
    except Overrun as exc:
        return None, [f"lowering aborted: {exc}"]


# Verdicts of graphs lowered in this process, by ``graph_key``: a graph seen again (the
# same model checked twice, a recompile, the same subgraph between graph breaks) is not
# lowered again. Single-op probes of ``blame`` likewise, by the probe's key.
_RESULTS: LRU[LoweringResult] = LRU(32)
_PROBES: LRU[bool] = LRU(4096)
# Outcomes that depend on the machine's load as much as on the graph: not reused.
_CIRCUMSTANTIAL = ("lowering aborted: did not finish", "lowering aborted: ran out of memory or crashed")


def _limits() -> str:
    """The limits a verdict was reached under (a verdict is reused under the same ones)."""
    return f"{TIMEOUT_S}:{MEMORY_BYTES}:{PROBE_MEMORY_BYTES}:{BLAME_TIMEOUT_S}"


def clear_cache() -> None:
    """Forget the lowering verdicts kept in this process."""
    _RESULTS.clear()
    _PROBES.clear()


def lower(gm: torch.fx.GraphModule, name: str = "main") -> LoweringResult:
    """Lower an aten FX graph (``meta['val']`` on its nodes) to StableHLO (in a child
    process with ``TIMEOUT_S`` and ``MEMORY_BYTES`` limits). A graph already lowered in
    this process gets the verdict it got then."""
    start = time.perf_counter()
    with phases.phase("cache"):
        digest = graph_key(gm, name)
        key = f"{digest}:{_limits()}"
        cached = _RESULTS.get(key) if digest else None
        source = "process"
        if cached is None and digest:
            kept = lowercache.get(key)
            cached = _from_kept(kept) if kept is not None else None
            source = "shared"
            if cached is not None:
                _RESULTS.put(key, cached)
    if cached is None:
        source = "lowered"
        # What the parent does around the children: copying and cleaning graphs for import.
        with phases.phase("prepare"):
            cached = _lower_uncached(gm, name)
        if digest and not cached.message.startswith(_CIRCUMSTANTIAL):
            _RESULTS.put(key, cached)
            with phases.phase("cache"):
                lowercache.put(key, dataclasses.asdict(cached))
    lowercache.log(digest or "-", name, source, time.perf_counter() - start)
    return cached


def _from_kept(kept: dict[str, Any]) -> LoweringResult | None:
    """A ``LoweringResult`` from a shared folder's entry (None when it is not one)."""
    try:
        return LoweringResult(**{f.name: kept[f.name] for f in dataclasses.fields(LoweringResult) if f.name in kept})
    except TypeError:
        return None


def _lower_uncached(gm: torch.fx.GraphModule, name: str) -> LoweringResult:
    """``lower`` without the reuse of earlier verdicts."""
    text, diags = _import_isolated(prepare(gm), name, TIMEOUT_S)
    if text is not None:
        return LoweringResult(True, stablehlo=text)
    joined = "\n".join(d.strip() for d in diags if d.strip())
    # A lowering stopped at its time or memory limit says nothing about any op: probing
    # ops alone would blame one for what host memory or time did (and run into the same
    # limits). The verdict is the host's.
    aborted = any(d.startswith("lowering aborted") for d in diags)
    op = None if aborted else failing_op(joined) or blame(gm)
    first = next((d for d in diags if d.startswith("lowering aborted")), "") or \
        next((d for d in diags if "failed" in d or "error" in d.lower()), diags[0] if diags else "")
    summary = first.strip().splitlines()[0][:300] if first.strip() else "lowering failed"
    return LoweringResult(False, op=op, message=joined or "lowering failed", summary=summary)


def failing_op(text: str) -> str | None:
    """The aten op named in Torch-MLIR diagnostics, as ``aten::name[.overload]`` (never a
    non-op such as an assert or a size query)."""
    for hit in _OP_IN_DIAG.finditer(text):
        name = f"aten::{hit.group(1)}"
        if not is_non_op(name):
            return name
    return None


def blame(gm: torch.fx.GraphModule) -> str | None:
    """Lower ops alone (in one child process); the first that fails is the op to blame.
    First one node per op; when all of those lower, one node per variant of an op (its
    non-tensor arguments and the ranks and dtypes of its tensors: a transposed or grouped
    convolution is not the plain one). ``None`` when every variant lowers alone (the
    failure is in their combination)."""
    firsts: dict[str, tuple[str, torch.fx.Node]] = {}
    variants: dict[str, tuple[str, torch.fx.Node]] = {}
    for node in gm.graph.nodes:
        if node.op == "call_function" and isinstance(node.target, torch._ops.OpOverload) and \
                not is_non_op(node.target):
            name = op_name(node.target)
            firsts.setdefault(name, (name, node))
            variants.setdefault(f"{name}{variant(node)}", (name, node))
    first_nodes = {id(node) for _, node in firsts.values()}
    deadline = time.monotonic() + BLAME_TIMEOUT_S
    return _blame_among(list(firsts.values()), deadline) or \
        _blame_among([(name, node) for name, node in variants.values() if id(node) not in first_nodes], deadline)


def variant(node: torch.fx.Node) -> str:
    """What sets one call of an op apart from another, short of tensor shapes."""
    def spell(value: Any) -> Any:
        val = value.meta.get("val") if isinstance(value, torch.fx.Node) else None
        return f"T{val.dim()}{val.dtype}" if isinstance(val, torch.Tensor) else \
            ("N" if isinstance(value, torch.fx.Node) else value)

    return repr(torch.fx.node.map_aggregate((node.args, node.kwargs), spell))


def _blame_among(candidates: list[tuple[str, torch.fx.Node]], deadline: float) -> str | None:
    """Lower each candidate node alone, in graph order; the op of the first that fails.
    ``None`` when none fails, or when the probes run out of ``blame``'s budget (time up to
    ``deadline``, ``PROBE_MEMORY_BYTES``): no op is blamed without proof."""
    probes: list[tuple[str, torch.fx.GraphModule]] = []
    for name, node in candidates:
        single = _single_node(node)
        if single is not None:
            probes.append((name, prepare(single)))
    keys = [f"{graph_key(probe, 'probe')}:{_limits()}" for _, probe in probes]
    known = [_PROBES.get(key) for key in keys]
    for (name, _), verdict in zip(probes, known):  # probes judged before in this process answer first
        if verdict is None:
            break
        if verdict is False:
            return name
    else:
        return None

    def judge() -> tuple[int | None, list[int]]:
        # In graph order, as without reuse: the first probe that fails is the one to blame.
        passed = []
        for i, (_, probe) in enumerate(probes):
            if known[i] is None and _import(probe, "probe")[0] is not None:
                passed.append(i)
            elif not known[i]:
                return i, passed
        return None, passed

    left = min(TIMEOUT_S, deadline - time.monotonic())
    if left <= 0:
        return None
    extra = min(PROBE_MEMORY_BYTES, MEMORY_BYTES)
    try:
        served = _judge_served(probes, known, time.monotonic() + left, extra)
        failed, passed = served if served is not None else \
            _timed_isolated(judge, "lower.probes", timeout=left, extra_memory=extra)
    except Overrun:
        return None
    for i in passed:
        _PROBES.put(keys[i], True)
    if failed is None:
        return None
    _PROBES.put(keys[failed], False)
    return probes[failed][0]


def _judge_served(probes: list[tuple[str, torch.fx.GraphModule]], known: list[bool | None], deadline: float,
                  extra_memory: int) -> tuple[int | None, list[int]] | None:
    """``_blame_among``'s judgement in the lowering server (one job, the probes in order);
    None when a probe does not travel or no server runs here (a forked child judges
    instead). ``Overrun`` past the deadline or when the server dies."""
    wired: list[bytes | bool] = []
    for (_, probe), verdict in zip(probes, known):
        data = _wired(probe) if verdict is None else verdict
        if data is None:
            return None
        wired.append(data)
    with phases.phase("isolate"):
        try:
            value, wall, cpu = lowerserver.judge(wired, timeout=max(0.0, deadline - time.monotonic()),
                                                 extra_memory=extra_memory)
        except RuntimeError:
            return None
        phases.add("lower.probes", wall, cpu, other_process=True)
    return value


def op_name(op: torch._ops.OpOverload) -> str:
    """``aten::name`` or ``aten::name.overload`` for an OpOverload."""
    base = op._schema.name
    return base if op._overloadname == "default" else f"{base}.{op._overloadname}"


def _single_node(node: torch.fx.Node) -> torch.fx.GraphModule | None:
    """A graph holding ``node`` alone, its tensor inputs as placeholders."""
    graph = torch.fx.Graph()
    env: dict[torch.fx.Node, torch.fx.Node] = {}
    for i, arg in enumerate(node.all_input_nodes):
        if not isinstance(arg.meta.get("val"), torch.Tensor):
            return None  # symbolic scalars etc.: the probe would not be meaningful
        ph = graph.placeholder(f"in{i}")
        ph.meta["val"] = arg.meta["val"]
        env[arg] = ph
    new = graph.node_copy(node, lambda n: env[n])
    val = node.meta.get("val")
    if isinstance(val, torch.Tensor):
        graph.output((new,))
    elif isinstance(val, (list, tuple)):
        outs = []
        for i, item in enumerate(val):
            if isinstance(item, torch.Tensor):
                get = graph.call_function(operator.getitem, (new, i))
                get.meta["val"] = item
                outs.append(get)
        if not outs:
            return None
        graph.output(tuple(outs))
    else:
        return None
    return torch.fx.GraphModule(torch.nn.Module(), graph)
