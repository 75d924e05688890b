"""Torch-MLIR fails to lower this graph to StableHLO, and no single op of it fails alone.

Found by the sweeper's trnsim compile stage (backward graph); torch 2.13.0+cpu, Torch-MLIR 20261001.
failed to legalize operation 'torch.constant.bool': %2 = "torch.constant.bool"() <{value = true}> : () -> !torch.bool
The graph as the compiler received it: input shapes and dtypes, every node's arguments,
the values of its tensor constants. Run: python graph-850be1d2a497.py
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
    P.append(B.inp('primals_1', (128, 64, 8), (512, 8, 1), torch.bfloat16))
    P.append(B.inp('primals_3', (2, 128, 4320), (552960, 4320, 1), torch.bfloat16))
    P.append(B.inp('tangents_1', (2, 64, 17280), (1106176, 17284, 1), torch.bfloat16))
    P.append(B.call(torch.ops.aten.empty_strided.default, ([2, 64, 17284], [1106176, 17284, 1]), {'dtype': torch.bfloat16, 'layout': torch.strided}))
    P.append(B.call(torch.ops.aten.full_like.default, (P[3], 0), {'pin_memory': False}))
    P.append(B.call(torch.ops.aten.slice_scatter.default, (P[4], P[2], 2, 0, 17280, 1), {}))
    P.append(B.call(torch.ops.aten.unsqueeze.default, (P[5], 2), {}))
    P.append(B.call(torch.ops.aten.unsqueeze.default, (P[1], 2), {}))
    P.append(B.call(torch.ops.aten.unsqueeze.default, (P[0], 2), {}))
    P.append(B.call(torch.ops.aten.convolution_backward.default, (P[6], P[7], P[8], [64], [1, 4], [0, 0], [1, 1], True, [0, 0], 1, [True, True, True]), {}))
    P.append(B.call(operator.getitem, (P[9], 0), {}))
    P.append(B.call(operator.getitem, (P[9], 1), {}))
    P.append(B.call(operator.getitem, (P[9], 2), {}))
    P.append(B.call(torch.ops.prims.squeeze.default, (P[10], [2]), {}))
    P.append(B.call(torch.ops.prims.squeeze.default, (P[11], [2]), {}))
    B.graph.output((P[14], P[12], P[13]))
    return torch.fx.GraphModule(B.root, B.graph)


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
