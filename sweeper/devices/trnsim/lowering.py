"""Lowering captured aten graphs to StableHLO with Torch-MLIR.

A graph that fails to legalize is a real compiler verdict. The MLIR diagnostics usually
name the op (``torch.aten._unsafe_index.Tensor``); when they only name an MLIR-level
construct (``torch.constant.int``), each node is lowered on its own to find the aten op to
blame. AOT graphs need clean-ups before import (``prepare``): ``None`` outputs (gradients of
inputs that need none) have no StableHLO type, and device placement has no meaning there.
"""

from __future__ import annotations

import copy
import re
from dataclasses import dataclass

import torch

_OP_IN_DIAG = re.compile(r"torch\.aten\.([A-Za-z0-9_]+(?:\.[A-Za-z0-9_]+)?)")


@dataclass(frozen=True)
class LoweringResult:
    """Outcome of one lowering: ``ok`` with the StableHLO text, or the failing op."""

    ok: bool
    op: str | None = None
    message: str = ""
    stablehlo: str = ""


def available() -> bool:
    """Whether Torch-MLIR is installed (the compile stage needs it to judge lowering)."""
    try:
        import torch_mlir.fx  # noqa: F401
    except ImportError:
        return False
    return True


def decomposition_table() -> dict:
    """The decompositions Torch-MLIR's StableHLO path expects (core ATen without it)."""
    try:
        from torch_mlir.extras.fx_decomp_util import get_decomposition_table
    except ImportError:
        from torch._decomp import core_aten_decompositions

        return dict(core_aten_decompositions())
    return dict(get_decomposition_table())


def prepare(gm: torch.fx.GraphModule) -> torch.fx.GraphModule:
    """A copy of ``gm`` ready for import: tensor outputs only, no device placement.

    Factory nodes carry ``device=trnsim:0``, which Torch-MLIR cannot import (StableHLO has
    no devices; placement is the runtime's business), so it is dropped.
    """
    gm = copy.deepcopy(gm)
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
    except Exception as exc:  # Torch-MLIR reports legalization failures as exceptions
        return None, diagnostics or [str(exc)]
    return str(module), diagnostics


def lower(gm: torch.fx.GraphModule, name: str = "main") -> LoweringResult:
    """Lower an aten FX graph (``meta['val']`` on its nodes) to StableHLO."""
    text, diags = _import(prepare(gm), name)
    if text is not None:
        return LoweringResult(True, stablehlo=text)
    joined = "\n".join(diags)
    op = failing_op(joined) or blame(gm)
    first = next((d for d in diags if "failed" in d or "error" in d.lower()), diags[0] if diags else "")
    return LoweringResult(False, op=op, message=first.strip().splitlines()[0][:300] if first else "lowering failed")


def failing_op(text: str) -> str | None:
    """The aten op named in Torch-MLIR diagnostics, as ``aten::name[.overload]``."""
    hit = _OP_IN_DIAG.search(text)
    return f"aten::{hit.group(1)}" if hit else None


def blame(gm: torch.fx.GraphModule) -> str | None:
    """Lower each call node alone; the first that fails is the op to blame."""
    for node in gm.graph.nodes:
        if node.op != "call_function" or not isinstance(node.target, torch._ops.OpOverload):
            continue
        single = _single_node(node)
        if single is not None and _import(prepare(single), "probe")[0] is None:
            return op_name(node.target)
    return None


def op_name(op: torch._ops.OpOverload) -> str:
    """``aten::name`` or ``aten::name.overload`` for an OpOverload."""
    base = op._schema.name
    return base if op._overloadname == "default" else f"{base}.{op._overloadname}"


def _single_node(node: torch.fx.Node) -> torch.fx.GraphModule | None:
    graph = torch.fx.Graph()
    env: dict[torch.fx.Node, torch.fx.Node] = {}
    for i, arg in enumerate(node.all_input_nodes):
        if not isinstance(arg.meta.get("val"), torch.Tensor):
            return None  # symbolic scalars etc.: the probe would not be meaningful
        ph = graph.placeholder(f"in{i}")
        ph.meta["val"] = arg.meta["val"]
        env[arg] = ph
    new = graph.node_copy(node, lambda n: env[n])
    if not isinstance(node.meta.get("val"), torch.Tensor):
        return None
    graph.output((new,))
    return torch.fx.GraphModule(torch.nn.Module(), graph)
