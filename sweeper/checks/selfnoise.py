"""The CPU reference's own noise: is a device gap more than the model's run-to-run jitter?

A model whose CPU result moves between two runs with the same seed and inputs (kernels
that reduce in a varying order, threads) cannot be held to a tolerance tighter than that
movement. When a device result is past the tolerance, the reference runs a second time on
a CPU copy of the model (same seed); a device gap within ``NOISE_MULTIPLIER`` times the
distance between the two CPU runs is the model's noise, not the device's failure, and the
record says so (``numerics.within_noise``). Only models past the tolerance pay for it.
"""

from __future__ import annotations

from typing import Any

import torch

from sweeper.checks.numerics import Diff, Tolerance, compare, compare_grads, cpu_twin
from sweeper.checks.reference import cpu_reference, cpu_rerun

# How many times its own noise a device gap may be (PyTorch's accuracy checks allow a
# small multiple of the reference's error in the same way).
NOISE_MULTIPLIER = 3.0


def output_noise(model: torch.nn.Module, inputs: dict[str, Any], reference: torch.Tensor, *, seed: int,
                 tol: Tolerance) -> Diff | None:
    """How far a second CPU run's output (same seed) is from the reference's."""
    again = cpu_rerun(model, inputs, seed=seed).output
    if again is None or again.shape != reference.shape:
        return None
    return compare(again, reference, tol)


def gradient_noise(model: torch.nn.Module, inputs: dict[str, Any], reference: dict[str, torch.Tensor], *, seed: int,
                   has_labels: bool, tol: Tolerance) -> Diff | None:
    """How far a second CPU run's parameter gradients (same seed) are from the reference's."""
    again = cpu_reference(cpu_twin(model), inputs, seed=seed, has_labels=has_labels, grads=True).grads
    return compare_grads(again, reference, tol) if again else None


def within_noise(gap: Diff, noise: Diff | None) -> bool:
    """Whether ``gap`` is within ``NOISE_MULTIPLIER`` times a non-zero ``noise``."""
    return noise is not None and noise.max_abs > 0 and gap.max_abs <= NOISE_MULTIPLIER * noise.max_abs


def finding(stage: str, tensor: str, gap: Diff, noise: Diff | None) -> dict[str, Any]:
    """What the record keeps of one noise check (``numerics.within_noise`` or ``numerics.noise``)."""
    return {
        "stage": stage,
        "tensor": tensor,
        "device_max_abs": gap.max_abs,
        "noise_max_abs": noise.max_abs if noise is not None else None,
        "multiplier": NOISE_MULTIPLIER,
        "within": within_noise(gap, noise),
    }
