"""Minimal reproducers of lowering-tool failures, as material for upstream bug reports.

For an op Torch-MLIR fails to lower, ``write_reproducer`` takes the first node of that op
in the (prepared) graph and writes ``<dir>/<op>-<hash>.py`` (named by its content, so every
sweep names it alike, whichever model met it first): a standalone script that rebuilds the
node alone as a tiny FX graph (same argument shapes, dtypes and constants) and imports it
to StableHLO with Torch-MLIR, exiting 1 with the diagnostic when the failure reproduces.
Beside it, ``<op>-<hash>.mlir`` holds the node's torch-dialect MLIR (the input of the failing
pipeline), when Torch-MLIR can import it at all.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import re
from pathlib import Path
from typing import Any

import torch

from sweeper.devices.trnsim.isolate import Overrun, run_isolated
from sweeper.devices.trnsim.lowering import MEMORY_BYTES, TIMEOUT_S, op_name, tool_version, variant
from sweeper.diagnostics import diagnostic_lines, signature
from sweeper.redact import redact

# The end of every reproducer script: import the graph with Torch-MLIR, print the failure and
# exit 1 while it still fails (escaped for ``str.format``, like the templates it ends).
MAIN_SOURCE = '''def main() -> int:
    from torch_mlir import ir
    from torch_mlir.compiler_utils import OutputType
    from torch_mlir.dialects import torch as torch_d
    from torch_mlir.extras.fx_importer import FxImporter
    from torch_mlir.fx import stateless_fx_import

    ctx = ir.Context()
    torch_d.register_dialect(ctx)
    diagnostics = []
    ctx.attach_diagnostic_handler(lambda diag: diagnostics.append(str(diag)) or True)
    try:
        module = stateless_fx_import(build(), output_type=OutputType.STABLEHLO,
                                     fx_importer=FxImporter(context=ctx), model_name="repro")
    except Exception as exc:  # the failure this file reproduces
        print("\\n".join(diagnostics + [f"{{type(exc).__name__}}: {{exc}}"]), file=sys.stderr)
        return 1
    print(module)
    print("lowered to StableHLO: the failure does not reproduce", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
'''

_TEMPLATE = '''"""Torch-MLIR fails to lower {op} to StableHLO.

Found by the sweeper's trnsim compile stage ({where}); torch {torch_version}, Torch-MLIR {tool_version}.
The op alone, with the argument shapes, dtypes and constants it had in the model's graph.
Run: python {filename}  (exit 1 and the diagnostic when the failure reproduces, 0 when it lowers)
"""

import operator
import sys

import torch
from torch._subclasses.fake_tensor import FakeTensorMode
{imports}
OP = {target}
# Tensor arguments (shape, dtype), in order: P[0], P[1], ...
INPUTS = {inputs}


def build() -> torch.fx.GraphModule:
    """The op as a one-node FX graph, with the ``meta["val"]`` Torch-MLIR's importer reads."""
    graph = torch.fx.Graph()
    mode = FakeTensorMode()
    with mode:
        fakes = [torch.empty(shape, dtype=dtype) for shape, dtype in INPUTS]
    P = []
    for i, fake in enumerate(fakes):
        P.append(graph.placeholder(f"in{{i}}"))
        P[-1].meta["val"] = fake
    args = {args}
    kwargs = {kwargs}
    node = graph.call_function(OP, args, kwargs)
    to_fake = dict(zip(P, fakes))
    with mode:
        val = OP(*torch.fx.node.map_arg(args, to_fake.get), **torch.fx.node.map_arg(kwargs, to_fake.get))
    node.meta["val"] = val
    if isinstance(val, torch.Tensor):
        graph.output((node,))
    else:
        outs = []
        for i, item in enumerate(val):
            if isinstance(item, torch.Tensor):
                outs.append(graph.call_function(operator.getitem, (node, i)))
                outs[-1].meta["val"] = item
        graph.output(tuple(outs))
    return torch.fx.GraphModule(torch.nn.Module(), graph)
'''
_TEMPLATE += "\n\n" + MAIN_SOURCE


class _NotWritable(Exception):
    """An argument a script cannot spell (a symbolic size, an opaque object)."""


def _literal(value: Any, inputs: list[torch.fx.Node]) -> str:
    """Python source for one node argument; graph inputs become ``P[i]``."""
    if isinstance(value, torch.fx.Node):
        return f"P[{inputs.index(value)}]"
    if isinstance(value, (list, tuple)):
        items = ", ".join(_literal(v, inputs) for v in value)
        return f"[{items}]" if isinstance(value, list) else f"({items}{',' if len(value) == 1 else ''})"
    if isinstance(value, float) and not math.isfinite(value):
        return f"float({str(value)!r})"
    if value is None or isinstance(value, (bool, int, float, str)):
        return repr(value)
    if isinstance(value, (torch.dtype, torch.layout, torch.memory_format)):
        return repr(value)  # torch.float32, torch.strided, torch.contiguous_format
    if isinstance(value, torch.device):
        return f"torch.device({str(value)!r})"
    raise _NotWritable(type(value).__name__)


def script_for(node: torch.fx.Node, *, where: str, filename: str) -> str | None:
    """The reproducer's source for ``node`` (an OpOverload call), or None when an argument
    cannot be written down (symbolic sizes)."""
    inputs = list(node.all_input_nodes)
    specs = []
    for arg in inputs:
        val = arg.meta.get("val")
        if not isinstance(val, torch.Tensor) or not all(isinstance(s, int) for s in val.shape):
            return None
        specs.append((tuple(int(s) for s in val.shape), val.dtype))
    try:
        args = _literal(tuple(node.args), inputs)
        kwargs = "{" + ", ".join(f"{k!r}: {_literal(v, inputs)}" for k, v in node.kwargs.items()) + "}"
    except _NotWritable:
        return None
    target = f"torch.ops.{node.target.namespace}.{node.target._opname}.{node.target._overloadname}"
    module = registering_module(node.target)
    imports = import_source(module, op_name(node.target)) if module else ""
    return _TEMPLATE.format(op=op_name(node.target), where=where, torch_version=torch.__version__,
                            tool_version=tool_version(), filename=filename, imports=imports,
                            target=target, inputs=_literal(specs, []), args=args, kwargs=kwargs)


# Libraries whose import fetches a compiled kernel from the Hub and runs it when the
# ``kernels`` package is installed (bitsandbytes on a CPU with AVX512-BF16). A sweep imports
# them with the package hidden (``libraries.quantization.import_without_hub_kernels``), so a
# reproducer does too: it runs no code from the Hub, needs no network, and meets the op as
# the sweep did.
HUB_KERNEL_IMPORTERS = frozenset({"bitsandbytes"})


def import_source(module: str, op: str) -> str:
    """The script's lines that import the library registering ``op``."""
    line = f"import {module}  # registers {op}\n"
    if module.split(".", 1)[0] not in HUB_KERNEL_IMPORTERS:
        return line
    return ("import logging\n"
            'sys.modules["kernels"] = None  # hidden: importing it would fetch and run a kernel from the Hub\n'
            f'logging.getLogger("{module}").setLevel(logging.ERROR)  # its warning that kernels is hidden would precede the diagnostic\n'
            f'{line}del sys.modules["kernels"]\n')


# Op namespaces torch itself registers: their ops exist in any script that imports torch.
TORCH_NAMESPACES = frozenset({"aten", "prims", "_refs", "quantized", "_quantized", "rngprims"})


def registering_module(target: torch._ops.OpOverload) -> str | None:
    """The Python module that registers a library's custom op (``transformers::X`` ->
    ``transformers.integrations.moe``), which a standalone reproducer must import; None for
    torch's own ops. A custom op defined with ``torch.library.custom_op`` knows its module;
    any other is reached through its namespace's package."""
    if target.namespace in TORCH_NAMESPACES:
        return None
    from torch._library.custom_ops import OPDEFS

    opdef = OPDEFS.get(f"{target.namespace}::{target._opname}")
    module = getattr(getattr(opdef, "_init_fn", None), "__module__", None)
    if isinstance(module, str) and all(part.isidentifier() for part in module.split(".")):
        return module
    return target.namespace


def _check(source: str) -> tuple[bool, str, str]:
    """Run the script's graph through Torch-MLIR here (in a child): whether it fails to
    lower, the node's torch-dialect MLIR ('' when not importable) and the diagnostic it
    fails with."""
    from torch_mlir.compiler_utils import OutputType
    from torch_mlir.fx import stateless_fx_import

    from sweeper.devices.trnsim.lowering import _import

    namespace: dict[str, Any] = {"__name__": "trnsim_repro"}
    exec(compile(source, "<reproducer>", "exec"), namespace)  # noqa: S102 - our own generated source
    lowered, diagnostics = _import(namespace["build"](), "repro")
    try:
        mlir = str(stateless_fx_import(namespace["build"](), output_type=OutputType.RAW, model_name="repro"))
    except Exception:  # noqa: BLE001 - no MLIR to show is an answer too
        mlir = ""
    return lowered is None, mlir, "\n".join(diagnostics)


def write_reproducer(gm: torch.fx.GraphModule, op: str, directory: str | Path, *, where: str,
                     diagnostic: str = "", exact: bool = False) -> Path | None:
    """Write ``<directory>/<op>-<hash>.py`` (and ``.mlir``) for a node of ``op`` in ``gm`` that fails
    alone (one node per variant of the op is tried: a transposed convolution may fail where
    the plain one lowers), the first whose failure has the signature of ``diagnostic`` (the
    graph's) when one has, else the first that fails; the script's path, or None when no node
    of ``op`` can be written down or every variant lowers alone (the failure needs its
    context, which a one-node script cannot show); with ``exact``, None too when no variant
    fails with ``diagnostic``'s signature. Beside the script, ``<op>-<hash>.json`` keeps the
    diagnostic it failed with when it was written."""
    stem = op.split("::", 1)[1] if op.startswith("aten::") else op.replace("::", ".")
    wanted = signature(diagnostic)
    found: list[tuple[str, str, str]] = []
    for node in _variants(gm, op)[:MAX_VARIANTS]:
        source = script_for(node, where=where, filename=f"{stem}.py")
        if source is None:
            continue
        try:
            fails, mlir, said = run_isolated(lambda src=source: _check(src), timeout=TIMEOUT_S,
                                             extra_memory=MEMORY_BYTES)
        except Overrun as exc:
            fails, mlir, said = True, "", f"lowering aborted: {exc}"  # the tool ran away on the op alone: that reproduces too
        if fails:
            found.append((source, mlir, said))
            if not wanted or signature(said) == wanted:
                break
    matching = [f for f in found if signature(f[2]) == wanted]
    if not found or (exact and wanted and not matching):
        return None
    source, mlir, said = (matching or found)[0]
    folder = Path(directory)
    folder.mkdir(parents=True, exist_ok=True)
    # Named by its content: the same script has the same name in every sweep, whichever
    # model or worker met the op first, so records and reports name it alike night to night.
    path = folder / f"{stem}-{hashlib.sha256(source.encode()).hexdigest()[:8]}.py"
    source = source.replace(f"Run: python {stem}.py", f"Run: python {path.name}")
    partial = path.with_name(f".{path.name}.{os.getpid()}")
    partial.write_text(source)
    os.replace(partial, path)  # two workers meeting one op write one whole file
    write_outcome(path, said)
    if mlir:
        write_mlir(path.with_suffix(".mlir"), mlir)
    return path


# A graph's constants (an embedding table, a zeros buffer) make its MLIR tens of megabytes,
# as element lists or as hex blobs in its dialect resources: past this size the long ones are
# elided, so a sweep folder stays small; the script itself rebuilds every constant.
MAX_MLIR_CHARS = 1_000_000
_LONG_DENSE = re.compile(r"dense<[^<>]{2000,}>")
_LONG_BLOB = re.compile(r'"0x[0-9A-Fa-f]{2000,}"')


def write_mlir(path: Path, mlir: str) -> None:
    """Write the torch-dialect MLIR beside a reproducer, long literals elided when it is large."""
    if len(mlir) > MAX_MLIR_CHARS:
        mlir = _LONG_DENSE.sub("dense_resource<__elided__>", mlir)
        mlir = _LONG_BLOB.sub(lambda m: f'"0x" /* {(len(m.group(0)) - 4) // 2} bytes elided */', mlir)
    path.write_text(mlir)


def write_outcome(script: Path, diagnostic: str) -> None:
    """``<script>.json``: the diagnostic the reproducer failed with when it was written, its
    signature and the tool's version, for the report to compare with the failure it stands for."""
    outcome = {"script": script.name, "exit": 1, "signature": signature(diagnostic),
               "diagnostic": redact("\n".join(diagnostic_lines(diagnostic)))[:4000], "torch-mlir": tool_version(),
               "torch": torch.__version__}
    script.with_suffix(".json").write_text(json.dumps(outcome, indent=1) + "\n")


# Variants of an op tried for a one-node reproducer, at most.
MAX_VARIANTS = 8


def _variants(gm: torch.fx.GraphModule, op: str) -> list[torch.fx.Node]:
    """The first node of each variant of ``op`` in ``gm`` (``lowering.variant``), in graph order."""
    seen: dict[str, torch.fx.Node] = {}
    for node in gm.graph.nodes:
        if node.op == "call_function" and isinstance(node.target, torch._ops.OpOverload) and \
                op_name(node.target) == op:
            seen.setdefault(variant(node), node)
    return list(seen.values())
