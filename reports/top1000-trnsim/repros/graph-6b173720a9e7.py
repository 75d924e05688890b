"""Torch-MLIR fails to lower this graph to StableHLO, and no single op of it fails alone.

Found by the sweeper's trnsim compile stage (backward graph); torch 2.13.0+cpu, Torch-MLIR 20261001.
failed to legalize operation 'torch.constant.bool': %3 = "torch.constant.bool"() <{value = true}> : () -> !torch.bool
The graph as the compiler received it: input shapes and dtypes, every node's arguments,
the values of its tensor constants. Run: python graph-6b173720a9e7.py
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
    P.append(B.inp('primals_1', (256, 1, 1), (1, 1, 1), torch.float32))
    P.append(B.inp('primals_2', (256, 128, 10), (1280, 10, 1), torch.float32))
    P.append(B.inp('primals_4', (2, 256, 400), (102400, 400, 1), torch.float32))
    P.append(B.inp('linalg_vector_norm', (256, 1, 1), (1, 1, 1), torch.float32))
    P.append(B.inp('mul', (256, 128, 10), (1280, 10, 1), torch.float32))
    P.append(B.inp('tangents_1', (2, 128, 2000), (256640, 2005, 1), torch.float32))
    P.append(B.call(torch.ops.aten.empty_strided.default, ([2, 128, 2005], [256640, 2005, 1]), {'dtype': torch.float32, 'layout': torch.strided}))
    P.append(B.call(torch.ops.aten.full_like.default, (P[6], 0), {'pin_memory': False}))
    P.append(B.call(torch.ops.aten.slice_scatter.default, (P[7], P[5], 2, 0, 2000, 1), {}))
    P.append(B.call(torch.ops.aten.unsqueeze.default, (P[8], 2), {}))
    P.append(B.call(torch.ops.aten.unsqueeze.default, (P[2], 2), {}))
    P.append(B.call(torch.ops.aten.unsqueeze.default, (P[4], 2), {}))
    P.append(B.call(torch.ops.aten.convolution_backward.default, (P[9], P[10], P[11], [128], [1, 5], [0, 0], [1, 1], True, [0, 0], 1, [True, True, True]), {}))
    P.append(B.call(operator.getitem, (P[12], 0), {}))
    P.append(B.call(operator.getitem, (P[12], 1), {}))
    P.append(B.call(operator.getitem, (P[12], 2), {}))
    P.append(B.call(torch.ops.prims.squeeze.default, (P[13], [2]), {}))
    P.append(B.call(torch.ops.prims.squeeze.default, (P[14], [2]), {}))
    P.append(B.call(torch.ops.aten.mul.Tensor, (P[17], P[1]), {}))
    P.append(B.call(torch.ops.aten.sum.dim_IntList, (P[18], [1, 2], True), {}))
    P.append(B.call(torch.ops.aten.div.Tensor, (P[0], P[3]), {}))
    P.append(B.call(torch.ops.aten.mul.Tensor, (P[3], P[3]), {}))
    P.append(B.call(torch.ops.aten.div.Tensor, (P[19], P[21]), {}))
    P.append(B.call(torch.ops.aten.mul.Tensor, (P[1], P[22]), {}))
    P.append(B.call(torch.ops.aten.sub.Tensor, (P[17], P[23]), {}))
    P.append(B.call(torch.ops.aten.mul.Tensor, (P[20], P[24]), {}))
    P.append(B.call(torch.ops.aten.div.Tensor, (P[19], P[3]), {}))
    B.graph.output((P[26], P[25], P[15], P[16]))
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
