"""Torch-MLIR fails to lower bitsandbytes::dequantize_4bit to StableHLO.

Found by the sweeper's trnsim compile stage (backward graph); torch 2.13.0+cpu, Torch-MLIR 20261001.
The op alone, with the argument shapes, dtypes and constants it had in the model's graph.
Run: python bitsandbytes.dequantize_4bit-27aaec92.py  (exit 1 and the diagnostic when the failure reproduces, 0 when it lowers)
"""

import operator
import sys

import torch
from torch._subclasses.fake_tensor import FakeTensorMode
import logging
sys.modules["kernels"] = None  # hidden: importing it would fetch and run a kernel from the Hub
logging.getLogger("bitsandbytes").setLevel(logging.ERROR)  # its warning that kernels is hidden would precede the diagnostic
import bitsandbytes  # registers bitsandbytes::dequantize_4bit
del sys.modules["kernels"]

OP = torch.ops.bitsandbytes.dequantize_4bit.default
# Tensor arguments (shape, dtype), in order: P[0], P[1], ...
INPUTS = [((704512, 1), torch.uint8), ((22016,), torch.float32)]


def build() -> torch.fx.GraphModule:
    """The op as a one-node FX graph, with the ``meta["val"]`` Torch-MLIR's importer reads."""
    graph = torch.fx.Graph()
    mode = FakeTensorMode()
    with mode:
        fakes = [torch.empty(shape, dtype=dtype) for shape, dtype in INPUTS]
    P = []
    for i, fake in enumerate(fakes):
        P.append(graph.placeholder(f"in{i}"))
        P[-1].meta["val"] = fake
    args = (P[0], P[1], 64, 'nf4', [512, 2752], torch.bfloat16)
    kwargs = {}
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


def main() -> int:
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
        print("\n".join(diagnostics + [f"{type(exc).__name__}: {exc}"]), file=sys.stderr)
        return 1
    print(module)
    print("lowered to StableHLO: the failure does not reproduce", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
