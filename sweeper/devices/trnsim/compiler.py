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
  or size queries, slice bounds clamped to the dimension. A legalization failure of an op
  the profile calls native (e.g. ``erfinv``) is then the tool's, not the chip's: a
  ``lowering_tool_error`` naming the op, with the full diagnostic and a one-node
  reproducer under the repro folder (``state.set_repro_dir``; the sweep uses OUT/repros).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import torch

from sweeper.devices.trnsim import aotlog, lowering, phases, state
from sweeper.devices.trnsim.decomps import compiler_decompositions
from sweeper.devices.trnsim.errors import DynamicShapeError, LoweringError, LoweringToolError, TrnsimError
from sweeper.devices.trnsim.graphcheck import (
    check_graph,
    eager_ops,
    refuse_data_dependent,
    refuse_ops,
    symbolic_inputs,
)
from sweeper.devices.trnsim.profile import Profile
from sweeper.devices.trnsim.reproducer import write_reproducer

_REGISTERED: dict[str, bool] = {}
# StableHLO of the graphs lowered so far, as (graph kind, module text): what the chip's
# compiler would receive. Cleared by ``reset_lowered``.
LOWERED: list[tuple[str, str]] = []
_KEEP_LOWERED = 16


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
    with phases.phase("aot"), aotlog.quiet():
        return backend(gm, example_inputs)


def _lower(gm: torch.fx.GraphModule, kind: str, profile: Profile) -> None:
    """Lower to StableHLO. A failure on an op the profile calls native is the lowering
    tool's (``lowering_tool_error``, with a reproducer); on any other op, or when no op can
    be blamed, a compile error as the chip's compiler would give."""
    if not lowering.available():
        state.note_compile_problem(f"{kind} graph not lowered: torch-mlir is not installed")
        return
    result = lowering.lower(gm, name=kind)
    if result.ok:
        LOWERED.append((kind, result.stablehlo))
        del LOWERED[:-_KEEP_LOWERED]  # a long sweep must not hold every model's modules
        return
    op = result.op
    if op is None or not op.startswith("aten::") or profile.policy(op, "compile") != "native":
        _refuse(LoweringError(f"{kind} graph: {op or 'an op'} failed to legalize to StableHLO: {result.summary}",
                              op=op))
        return  # collect-all mode: recorded, compilation goes on
    repro = _reproducer(gm, op, kind)
    where = f"\nreproducer: {repro}" if repro else ""
    _refuse(LoweringToolError(f"{kind} graph: Torch-MLIR failed to lower {op}, which the profile marks native "
                              f"(a lowering-tool finding, not a chip gap): {result.summary}{where}\n"
                              f"full diagnostic:\n{result.message}", op=op, repro=repro))


def _reproducer(gm: torch.fx.GraphModule, op: str, kind: str) -> str | None:
    """Write the standalone reproducer of ``op`` under the repro folder, if one is set."""
    folder = state.STATE.repro_dir
    if not folder:
        return None
    try:
        path = write_reproducer(lowering.prepare(gm), op, folder, where=f"{kind} graph")
    except Exception as exc:  # noqa: BLE001 - a reproducer is a bonus; the verdict stands without it
        state.note_compile_problem(f"reproducer for {op} not written: {type(exc).__name__}: {exc}"[:300])
        return None
    return str(path) if path else None


def _refuse(exc: TrnsimError) -> None:
    # The record's reason keeps the whole message; its list of problems, the telling line.
    state.note_compile_problem(f"{exc.reason_kind.value}: " + str(exc).split("\nfull diagnostic:")[0])
    state.refuse(exc)


def reset_lowered() -> None:
    """Forget the StableHLO kept from earlier compilations."""
    LOWERED.clear()


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

    Data-dependent output shapes (``nonzero``) are captured into the graph instead of
    breaking it, so the compiler sees them and refuses them per the profile, as the chip's
    compiler would. This is a process-wide Dynamo setting: one device per process.
    """
    if _REGISTERED:
        return
    from torch._dynamo import config
    from torch._dynamo.backends.registry import register_backend as register

    register(name="trnsim")(trnsim_backend)
    config.capture_dynamic_output_shape_ops = True
    _REGISTERED["trnsim"] = True


def follow_profile_shapes(allows_dynamic: bool) -> None:
    """Without dynamic shapes on the chip, a call with new shapes recompiles for them
    (static) instead of Dynamo turning the graph symbolic, which trnsim would refuse."""
    from torch._dynamo import config

    config.automatic_dynamic_shapes = allows_dynamic
