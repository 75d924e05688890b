"""``torch.compile(backend="trnsim")``: check captured graphs against the profile, lower
them to StableHLO with Torch-MLIR, then run them on trnsim tensors.

Which profile ops survive AOT decompositions, and why:

* AOT autograd decomposes as a vendor compiler does (``decomps``: core ATen, Torch-MLIR's
  table, a few backward ops neither covers) *minus every op the profile gives a non-native
  compile policy*: those stay in the graph
  as themselves, so an op the chip's compiler cannot lower is refused by name instead of
  disappearing into primitives that happen to legalize.
* Some ops never reach a backend undecomposed: PyTorch's Python dispatcher rewrites them
  during tracing for every backend (``upsample_bilinear2d.vec`` becomes ``_unsafe_index``
  arithmetic). Decomposed that way, bilinear and bicubic upsampling do legalize (measured
  with Torch-MLIR 20261001), so judged only after decomposition the chip would seem to
  support them. To keep the profile honest, the Dynamo graph is first replayed on fake
  tensors and the aten ops eager execution would dispatch are checked too. So the profile
  applies to what the model asks for, and Torch-MLIR judges what is left.
* Before lowering, graphs are canonicalised (``canonical``): no asserts, device placement
  or size queries, slice bounds clamped to the dimension. A lowering failure is the chip's
  (``compile_error``) only when it names an op the profile does not call native. One that
  names a native op (e.g. ``erfinv``), or names no op at all (an importer exception, a
  pass failing a verifier, ops that lower alone but not together), is the tool's: a
  ``lowering_tool_error`` with the full diagnostic and a reproducer under the repro
  folder (``state.set_repro_dir``; the sweep uses OUT/repros): the op alone, or the whole
  graph keyed by its hash. A failure the harness causes (a constant without storage, a
  package the tool needs missing) is ``harness``; a lowering that runs past its limits is
  host-side ``timeout``/``oom``, never the device's.
"""

from __future__ import annotations

import contextlib
import hashlib
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import torch
from torch._subclasses.fake_tensor import unset_fake_temporarily

import sweeper.devices.trnsim.aotlog as aotlog
import sweeper.devices.trnsim.lowering as lowering
import sweeper.devices.trnsim.phases as phases
import sweeper.devices.trnsim.state as state
import sweeper.devices.trnsim.tracefail as tracefail
from sweeper.devices.base import REPROS
from sweeper.devices.trnsim.decomps import compiler_decompositions
from sweeper.devices.trnsim.errors import (
    DynamicShapeError,
    LoweringError,
    LoweringHarnessError,
    LoweringLimitError,
    LoweringToolError,
    TrnsimError,
)
from sweeper.devices.trnsim.graphcheck import (
    check_graph,
    eager_ops,
    refuse_data_dependent,
    refuse_ops,
    symbolic_inputs,
)
from sweeper.devices.trnsim.graphkey import graph_key
from sweeper.devices.trnsim.graphrepro import write_graph_reproducer
from sweeper.devices.trnsim.profile import Profile
from sweeper.devices.trnsim.reproducer import write_reproducer

_REGISTERED: dict[str, bool] = {}
# StableHLO of the graphs lowered so far, as (graph kind, module text): what the chip's
# compiler would receive. Cleared by ``reset_lowered``.
LOWERED: list[tuple[str, str]] = []
_KEEP_LOWERED = 16
# Graphs checked and lowered in full for the current model, by their structure without
# sizes (``_structure``: the nodes, grad mode, the inputs' dtypes and ranks). A static-shape
# compiler compiles each new shape anew; the simulator's verdict on a graph that differs
# from a checked one only in its sizes is the one that graph got, so within
# ``new_shapes()`` (the shapes stage's recompiles) such a graph runs as traced (autograd
# eagerly, on trnsim) instead of paying the profile checks, AOT autograd and lowering
# again. Outside it every graph goes the full way. Cleared with ``reset_lowered``.
_CHECKED_STRUCTURES: set[tuple[Any, ...]] = set()
_NEW_SHAPES = {"active": False}


def trnsim_backend(gm: torch.fx.GraphModule, example_inputs: Sequence[Any]) -> Callable[..., Any]:
    """The Dynamo backend: profile checks, AOT autograd, per-graph lowering."""
    with phases.phase("backend"):
        return _compile(gm, example_inputs)


def _compile(gm: torch.fx.GraphModule, example_inputs: Sequence[Any]) -> Callable[..., Any]:
    from functorch.compile import make_boxed_func
    from torch._dynamo.backends.common import aot_autograd

    profile = state.active_profile()
    if not profile.allows("dynamic_shapes") and symbolic_inputs(gm, example_inputs):
        _refuse(DynamicShapeError("trnsim compiles static shapes only: the graph has symbolic input shapes "
                                  "(torch.compile(dynamic=True) or automatic dynamic shapes)", feature="dynamic_shapes"))
    structure = _structure(gm, example_inputs)
    if _NEW_SHAPES["active"] and structure in _CHECKED_STRUCTURES:
        return gm.forward
    # A line AOT autograd could not trace in an enclosing frame fails here at once.
    tracefail.refuse_known(gm, example_inputs)
    with phases.phase("scan"):
        ops = eager_ops(gm, example_inputs)
    refuse_data_dependent(ops, profile)
    refuse_ops([name for name, dependent in ops.items() if not dependent], profile)

    def stage(kind: str) -> Callable[..., Any]:
        def compile_graph(aten_gm: torch.fx.GraphModule, inputs: Sequence[Any]) -> Callable[..., Any]:
            check_graph(aten_gm, kind, profile)
            _lower(aten_gm, kind, profile)
            return make_boxed_func(aten_gm.forward)

        return compile_graph

    table = compiler_decompositions(profile)
    backend = aot_autograd(fw_compiler=stage("forward"), bw_compiler=stage("backward"),
                           inference_compiler=stage("inference"), decompositions=table)
    with phases.phase("aot"), aotlog.quiet(), tracefail.watching():
        try:
            compiled = backend(gm, example_inputs)
        except tracefail.fallback_exceptions() as exc:  # Dynamo breaks the graph and traces nested frames
            tracefail.remember(exc)
            raise
    _CHECKED_STRUCTURES.add(structure)
    return compiled


def _structure(gm: torch.fx.GraphModule, example_inputs: Sequence[Any]) -> tuple[Any, ...]:
    """A Dynamo graph as its checks see it, sizes left out: grad mode, the nodes as (kind,
    target) and each input's dtype and rank (or type). Two shapes of one model whose code
    takes the same path give the same structure."""
    inputs = tuple((str(x.dtype), x.dim()) if isinstance(x, torch.Tensor) else type(x).__name__ for x in example_inputs)
    return torch.is_grad_enabled(), inputs, tuple((node.op, str(node.target)) for node in gm.graph.nodes)


@contextlib.contextmanager
def new_shapes() -> Iterator[None]:
    """Within the block a graph that differs from one checked for this model only in its
    sizes runs as traced, with that graph's verdict (the shapes stage's recompiles)."""
    before = _NEW_SHAPES["active"]
    _NEW_SHAPES["active"] = True
    try:
        yield
    finally:
        _NEW_SHAPES["active"] = before


def _lower(gm: torch.fx.GraphModule, kind: str, profile: Profile) -> None:
    """Lower to StableHLO and, when that fails, refuse the graph with the error whose it
    is (``_verdict``)."""
    why_not = lowering.unavailable_reason()
    if why_not:
        state.note_compile_problem(f"{kind} graph not lowered: {why_not}")
        return
    # AOT autograd calls its compilers under its FakeTensorMode. Torch-MLIR's importer reads
    # the values of the graph's tensor constants (``torch.tensor(...)`` in model code, lifted
    # as ``_tensor_constant<n>``); under that mode a real constant read on the CPU becomes a
    # fake one without storage ("tolist() shouldn't be called on a tensor with unallocated
    # storage"). The chip's compiler gets the graph outside any tracing mode.
    with unset_fake_temporarily():
        result = lowering.lower(gm, name=kind)
        if result.ok:
            LOWERED.append((kind, result.stablehlo))
            del LOWERED[:-_KEEP_LOWERED]  # a long sweep must not hold every model's modules
            return
        error = _verdict(gm, kind, profile, result)
    _refuse(error)  # collect-all mode: recorded, compilation goes on


def _verdict(gm: torch.fx.GraphModule, kind: str, profile: Profile, result: lowering.LoweringResult) -> TrnsimError:
    """Whose a lowering failure is. The chip's (``compile_error``) only when an op is named
    that the profile does not call native; the tool's (``lowering_tool_error``, with a
    reproducer) when it fails on a native op or on the graph without naming an op; the
    harness's when the failure comes from how the graph was handed over or the host."""
    op = result.op
    ours = _harness_cause(result.message)
    if ours:
        return LoweringHarnessError(f"{kind} graph not lowered, not the chip's nor the tool's fault: {ours}: "
                                    f"{result.summary}\nfull diagnostic:\n{result.message}", op=op)
    if op is None and result.message.startswith(_ABORTED):
        return LoweringLimitError(f"{kind} graph: host-side lowering ran past its limits "
                                  f"({lowering.TIMEOUT_S:.0f} s, {lowering.MEMORY_BYTES >> 20} MiB extra): "
                                  f"{result.summary}", timed_out="did not finish" in result.summary)
    # Any op is judged by the profile, a library's custom op (``transformers::...``) as an
    # aten op: one the profile does not declare is native by its default, so the tool failing
    # on it is the tool's (with a reproducer), whatever namespace the op lives in.
    if op is not None and profile.policy(op, "compile") != "native":
        return LoweringError(f"{kind} graph: {op} failed to legalize to StableHLO: {result.summary}", op=op)
    repro = _reproducer(gm, op, kind, result.summary, result.message)
    where = f"\nreproducer: {_as_named(repro)}" if repro else ""
    what = (f"Torch-MLIR failed to lower {op}, which the profile marks native" if op else
            "Torch-MLIR failed on the graph without naming an op, and no op of it fails alone")
    return LoweringToolError(f"{kind} graph: {what} (a lowering-tool finding, not a chip gap): {result.summary}{where}\n"
                             f"full diagnostic:\n{result.message}", op=op, repro=repro)


def _as_named(repro: str) -> str:
    """The reproducer as a message names it: ``repros/<file>`` in a sweep folder, the same
    text however the sweep's ``--out`` was spelled (relative, absolute, another machine's);
    outside a sweep (``TRNSIM_REPRO_DIR``) its path."""
    path = Path(repro)
    return f"{REPROS}/{path.name}" if path.parent.name == REPROS else repro


# How ``lowering`` reports a lowering stopped at its time or memory limit.
_ABORTED = "lowering aborted: "
# Lowering failures the harness causes (how the graph is handed to Torch-MLIR, what the
# host has installed), by a phrase of the tool's message: what each means.
_HARNESS_CAUSES = {
    "tensor with unallocated storage": "a tensor without storage (fake or meta) was handed to the importer as a constant",
    "Please convert all Tensors to FakeTensors": "the importer ran inside a fake tensor mode",
    "requires the ml_dtypes package": "Torch-MLIR needs the ml_dtypes package for bfloat16 constants (pip install ml-dtypes)",
}


def _harness_cause(message: str) -> str | None:
    """What the harness did wrong, when the tool's message shows it."""
    return next((why for phrase, why in _HARNESS_CAUSES.items() if phrase in message), None)


def _reproducer(gm: torch.fx.GraphModule, op: str | None, kind: str, summary: str, diagnostic: str) -> str | None:
    """Write a standalone reproducer under the repro folder, if one is set: the op alone
    when that fails too, else the whole graph (keyed by its hash)."""
    folder = state.STATE.repro_dir
    if not folder:
        return None
    try:
        prepared = lowering.prepare(gm)
        where = f"{kind} graph"
        # The op alone when it fails as the graph does; else the whole graph, which fails as
        # it did; else the op alone failing otherwise (the report marks that it differs).
        path = write_reproducer(prepared, op, folder, where=where, diagnostic=diagnostic, exact=True) if op else None
        if path is None:
            key = graph_key(prepared, kind) or hashlib.sha256(summary.encode()).hexdigest()
            path = write_graph_reproducer(prepared, key, folder, where=where, summary=summary)
        if path is None and op:
            path = write_reproducer(prepared, op, folder, where=where, diagnostic=diagnostic)
    except Exception as exc:  # noqa: BLE001 - a reproducer is a bonus; the verdict stands without it
        state.note_compile_problem(f"reproducer for {op or kind + ' graph'} not written: {type(exc).__name__}: {exc}"[:300])
        return None
    return str(path) if path else None


def _refuse(exc: TrnsimError) -> None:
    # The record's reason keeps the whole message; its list of problems, the telling line.
    state.note_compile_problem(f"{exc.reason_kind.value}: " + str(exc).split("\nfull diagnostic:")[0])
    state.refuse(exc)


def reset_lowered() -> None:
    """Forget the StableHLO kept from earlier compilations and the graphs checked."""
    LOWERED.clear()
    _CHECKED_STRUCTURES.clear()


def graph_break_reasons() -> list[str]:
    """First lines of Dynamo's graph-break reasons so far (reset by ``torch._dynamo.reset``)."""
    from torch._dynamo.utils import counters

    return [reason.strip().splitlines()[0] for reason in counters["graph_break"]]


def graph_break_count() -> int:
    """Number of graph breaks Dynamo recorded so far."""
    from torch._dynamo.utils import counters

    return int(sum(counters["graph_break"].values()))


def register_backend() -> None:
    """Make ``backend="trnsim"`` known to torch.compile (idempotent).

    Dynamo's process-wide settings are left as they are: a data-dependent op (``nonzero``)
    breaks the graph and runs eagerly on the device, as under a user's ``torch.compile``.
    Capturing it into the graph is the compile stage's ``whole_graph`` choice, per call.
    """
    if _REGISTERED:
        return
    from torch._dynamo.backends.registry import register_backend as register

    register(name="trnsim")(trnsim_backend)
    _REGISTERED["trnsim"] = True


def follow_profile_shapes(allows_dynamic: bool) -> None:
    """Without dynamic shapes on the chip, a call with new shapes recompiles for them
    (static) instead of Dynamo turning the graph symbolic, which trnsim would refuse."""
    from torch._dynamo import config

    config.automatic_dynamic_shapes = allows_dynamic
