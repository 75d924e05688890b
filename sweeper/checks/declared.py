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
_MATMUL = {aten.mm.default, aten.addmm.default, aten.bmm.default, aten.baddbmm.default, aten.addbmm.default,
           aten.mv.default, aten.addmv.default}
_CONV = {aten.convolution.default, aten.convolution_backward.default}


class DeclaredMath(TorchDispatchMode):
    """Rounds the float32 inputs of matmuls and convolutions as ``math`` declares."""

    def __init__(self, math: Float32Math) -> None:
        super().__init__()
        self.bits = {"matmul": MANTISSA_BITS[math.matmul], "conv": MANTISSA_BITS[math.conv]}

    def __torch_dispatch__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
        family = "matmul" if func in _MATMUL else "conv" if func in _CONV else None
        if family is not None and self.bits[family] < 23:
            args = tuple(round_mantissa(a, self.bits[family]) if isinstance(a, torch.Tensor) else a for a in args)
        return func(*args, **(kwargs or {}))


@contextlib.contextmanager
def declared_math(math: Float32Math | None) -> Iterator[None]:
    """CPU matmuls and convolutions inside the block compute in ``math`` (nothing changes
    for exact float32 or None)."""
    if math is None or math.exact:
        yield
        return
    with DeclaredMath(math):
        yield
