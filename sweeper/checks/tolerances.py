"""How far a device result may be from its CPU reference, per dtype (no torch import:
reports read it too)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Tolerance:
    """A result passes when ``max_abs <= max(atol, rtol * max|reference|)``."""

    atol: float
    rtol: float

    def to_dict(self) -> dict[str, float]:
        return {"atol": self.atol, "rtol": self.rtol}


# Per dtype. The reference runs in the same dtype as the device (see ``tolerance_for``),
# so these bound the device's own deviations (other kernels, other summation orders), not
# the format's rounding. A whole network accumulates a few units in the last place of its
# largest output: bfloat16 keeps 8 significant bits (2**-8 ~ 3.9e-3 per rounding), float16
# keeps 11 (2**-11 ~ 4.9e-4); the bounds allow ~4-10 such roundings. float32 takes the
# sweep's ``atol`` setting (1e-3 by default) for both.
TOLERANCES: dict[str, Tolerance] = {
    "bfloat16": Tolerance(atol=1e-2, rtol=3e-2),
    "float16": Tolerance(atol=2e-3, rtol=5e-3),
}


def tolerance_for(dtype: str, *, atol: float) -> Tolerance:
    """The tolerance for a sweep in ``dtype``; ``atol`` (the sweep's setting) is the
    float32 bound and a floor for the others.

    Why a same-dtype reference: against a float32 reference a bfloat16 run differs by the
    format's rounding (~1e-2 relative) on every chip alike, which would drown the device's
    own deviations; the CPU running the same bfloat16 model isolates what the device does
    differently.
    """
    table = TOLERANCES.get(dtype)
    if table is None:
        return Tolerance(atol=atol, rtol=atol)
    return Tolerance(atol=max(atol, table.atol), rtol=max(atol, table.rtol))
