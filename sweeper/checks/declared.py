"""The CPU computing in a device's declared float32 math: the yardstick of what that math
is allowed.

A device that declares TF32 convolutions (cuDNN's default) is right when its result is as
far from exact maths as any correct TF32 convolution is. ``declared_math`` runs a CPU
model the same way: the float32 inputs of every matmul and convolution (forward and
backward) rounded to the declared mantissa, float32 accumulation. Numerics then allows the
device a small multiple of this run's distance from a float64 run (``selfnoise``), and a
kernel error of the same size on a device that declares exact float32 still fails.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

import torch
from torch.utils._python_dispatch import TorchDispatchMode

from sweeper.devices.precision import MANTISSA_BITS, Float32Math, round_mantissa

aten = torch.ops.aten
# Op -> (family, the positions of the operands a TF32 unit reads rounded): the factors of a
# product, never the tensor added to it (``addmm``'s ``self``) nor a convolution's bias.
_OPERANDS: dict[Any, tuple[str, tuple[int, ...]]] = {
    aten.mm.default: ("matmul", (0, 1)), aten.bmm.default: ("matmul", (0, 1)), aten.mv.default: ("matmul", (0, 1)),
    aten.addmm.default: ("matmul", (1, 2)), aten.baddbmm.default: ("matmul", (1, 2)),
    aten.addbmm.default: ("matmul", (1, 2)), aten.addmv.default: ("matmul", (1, 2)),
    aten.convolution.default: ("conv", (0, 1)), aten.convolution_backward.default: ("conv", (0, 1, 2)),
}


class DeclaredMath(TorchDispatchMode):
    """Rounds the float32 inputs of matmuls and convolutions as ``math`` declares."""

    def __init__(self, math: Float32Math) -> None:
        super().__init__()
        self.bits = {"matmul": MANTISSA_BITS[math.matmul], "conv": MANTISSA_BITS[math.conv]}

    def __torch_dispatch__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
        found = _OPERANDS.get(func)
        if found is not None and self.bits[found[0]] < 23:
            bits, operands = self.bits[found[0]], found[1]
            args = tuple(round_mantissa(a, bits) if i in operands and isinstance(a, torch.Tensor) else a
                         for i, a in enumerate(args))
        return func(*args, **(kwargs or {}))


@contextlib.contextmanager
def declared_math(math: Float32Math | None) -> Iterator[None]:
    """CPU matmuls and convolutions inside the block compute in ``math`` (nothing changes
    for exact float32 or None)."""
    if math is None or math.exact:
        yield
        return
    from torch.nn.attention import SDPBackend, sdpa_kernel

    # Attention as its matmuls (the math backend), as a device without a fused float32
    # attention kernel runs it: the CPU's fused kernel would hide them from the rounding.
    with sdpa_kernel([SDPBackend.MATH]), DeclaredMath(math):
        yield
