"""Torch-MLIR fails to lower this graph to StableHLO, and no single op of it fails alone.

Found by the sweeper's trnsim compile stage (backward graph); torch 2.13.0+cpu, Torch-MLIR 20261001.
failed to legalize operation 'torch.vtensor.literal': %3 = "torch.vtensor.literal"() <{value = dense<0.000000e+00> : tensor<2x4x1x64xf32>}> : () -> !torch.vtensor<[2,4,1,64],f32>
The graph as the compiler received it: input shapes and dtypes, every node's arguments,
the values of its tensor constants. Run: python graph-02874da07716.py
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
    P.append(B.inp('primals_2', (2,), (1,), torch.int64))
    P.append(B.inp('primals_3', (2,), (1,), torch.int64))
    P.append(B.inp('primals_5', (2,), (1,), torch.int64))
    P.append(B.inp('primals_6', (2,), (1,), torch.int64))
    P.append(B.inp('tangents_1', (512, 2, 256), (512, 256, 1), torch.float32))
    P.append(B.inp('tangents_2', (2, 512, 4, 514), (1052672, 2056, 514, 1), torch.float32))
    P.append(B.call(torch.ops.aten.empty_strided.default, ([], []), {'dtype': torch.float32, 'layout': torch.strided}))
    P.append(B.call(torch.ops.aten.full_like.default, (P[6], 0), {'pin_memory': False}))
    P.append(B.call(torch.ops.aten.index_put.default, (P[5], [P[3], P[2]], P[7]), {}))
    P.append(B.call(torch.ops.aten.empty_strided.default, ([2, 256], [256, 1]), {'dtype': torch.float32, 'layout': torch.strided}))
    P.append(B.call(torch.ops.aten.full_like.default, (P[9], 0), {'pin_memory': False}))
    P.append(B.call(torch.ops.aten.index_put.default, (P[4], [P[2], P[3]], P[10]), {}))
    P.append(B.call(torch.ops.aten.index.Tensor, (P[4], [P[2], P[3]]), {}))
    P.append(B.call(torch.ops.aten.view.default, (P[12], [2, 4, 64]), {}))
    P.append(B.call(torch.ops.aten.empty_strided.default, ([2, 4, 1, 64], [256, 64, 64, 1]), {'dtype': torch.float32, 'layout': torch.strided}))
    P.append(B.call(torch.ops.aten.full_like.default, (P[14], 0), {'pin_memory': False}))
    P.append(B.call(torch.ops.aten.index_put.default, (P[15], [P[0], None, P[1]], P[13], True), {}))
    B.graph.output((P[16], P[11], P[8]))
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
