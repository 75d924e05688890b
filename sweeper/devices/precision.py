"""A device's float32 math, as it declares it: which float32 matmuls and convolutions
round their inputs to fewer mantissa bits (TF32 on NVIDIA GPUs since Ampere, a chip's
"fast float32" mode), and the one rounding function that both trnsim and the CPU's
emulation of a declared precision use.

Numerics judges a device against a float64 CPU run with the bound its declared math
implies: a TF32 convolution is allowed a TF32 error, an exact float32 one is not
(``sweeper.checks.declared``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

# Mantissa bits each float32 "math mode" keeps in the inputs of a matmul or convolution.
MANTISSA_BITS: dict[str, int] = {"ieee": 23, "tf32": 10, "bf16": 7}
# What ``torch.get_float32_matmul_precision()`` means for a GPU's matmuls (PyTorch's docs:
# "high" lets float32 matmuls use TF32, "medium" bfloat16-based algorithms).
MATMUL_PRECISION: dict[str, str] = {"highest": "ieee", "high": "tf32", "medium": "bf16"}


@dataclass(frozen=True)
class Float32Math:
    """How a device computes float32 matmuls and convolutions: ``ieee`` (exact float32),
    ``tf32`` or ``bf16`` (inputs rounded to 10 or 7 mantissa bits, float32 accumulation).
    ``source`` says where the declaration came from (live settings, a profile)."""

    matmul: str = "ieee"
    conv: str = "ieee"
    source: str = "exact float32 (the default for a device that declares nothing)"
    strict: bool = False  # --strict-float32 asked for exact float32

    def __post_init__(self) -> None:
        for part in (self.matmul, self.conv):
            if part not in MANTISSA_BITS:
                raise ValueError(f"float32 math {part!r} is not one of {', '.join(MANTISSA_BITS)}")

    @property
    def exact(self) -> bool:
        """Whether every float32 matmul and convolution is exact float32."""
        return self.matmul == "ieee" and self.conv == "ieee"

    def describe(self) -> str:
        """One line for reports: ``float32 exact`` or ``float32 matmul tf32, conv tf32``."""
        if self.exact:
            return "float32 exact" + (" (strict)" if self.strict else "")
        return f"float32 matmul {self.matmul}, conv {self.conv}"

    def to_dict(self) -> dict[str, Any]:
        return {"float32_matmul": self.matmul, "float32_conv": self.conv, "source": self.source,
                "strict": self.strict}

    @classmethod
    def from_dict(cls, data: dict[str, Any] | None) -> Float32Math:
        data = data or {}
        return cls(matmul=data.get("float32_matmul", "ieee"), conv=data.get("float32_conv", "ieee"),
                   source=data.get("source", ""), strict=bool(data.get("strict", False)))


EXACT = Float32Math()


def strictly(math: Float32Math) -> Float32Math:
    """``math`` made exact, for ``--strict-float32`` (the source says what it overrode)."""
    return Float32Math(source=f"--strict-float32 (the device's default: {math.describe()})", strict=True)


def round_mantissa(tensor: Any, bits: int) -> Any:
    """``tensor`` (float32) with its mantissa rounded to ``bits`` bits, to nearest, ties to
    even, as a TF32 or bfloat16 unit reads a float32 input; other dtypes, exact float32 and
    non-finite values pass unchanged."""
    import torch

    if tensor.dtype is not torch.float32 or bits >= 23:
        return tensor
    drop = 23 - bits
    as_int = tensor.contiguous().view(torch.int32)
    lsb = (as_int >> drop) & 1
    rounded = (as_int + ((1 << (drop - 1)) - 1) + lsb) & ~((1 << drop) - 1)
    out = rounded.view(torch.float32).reshape(tensor.shape)
    return torch.where(torch.isfinite(tensor), out, tensor)
