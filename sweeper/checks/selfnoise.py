"""The CPU reference's own noise: is a device gap more than the reference's own error?

Two measures, either of which clears a gap past the tolerance (recorded as
``numerics.within_noise``; otherwise ``numerics.noise`` and the gap is the device's):

* **Run to run.** A model whose CPU result moves between two runs with the same seed and
  inputs (kernels that reduce in a varying order, threads) cannot be held to a tolerance
  tighter than that movement: the reference runs a second time on a CPU copy (same seed)
  and a device gap within ``NOISE_MULTIPLIER`` times the distance between the two runs is
  the model's noise.
* **Rounding (float32 sweeps).** Two CPU runs in one process are usually bitwise
  identical, so the first measure sees 0 where the reference is still off by its own
  rounding. A device that computes the same maths in another legal order (another
  attention kernel, another blocking of a matmul, other threads) rounds differently, and a
  gradient whose exact value cancels to almost nothing (a parameter below a LayerNorm whose
  output is averaged: layoutlmv3's ``cls_token``, exactly 0 in float64, 7e-5 on the CPU in
  float32) is *nothing but* rounding, so any two orders differ by 100% of it. A second
  run under another thread count would not show it (measured: 1e-8 against a device gap of
  4e-5); a run in float64 does. (Where trnsim's float32 rounding differs from the CPU's:
  like any PrivateUse1 backend without a fused attention kernel, it runs
  ``scaled_dot_product_attention`` as PyTorch's math decomposition, bitwise the CPU's
  ``_scaled_dot_product_attention_math``, where the CPU runs its fused flash kernel.)
  As PyTorch's Dynamo accuracy harness does with its fp64 reference, the device passes
  when, for every tensor past the tolerance, its distance from a float64 CPU run is within
  ``NOISE_MULTIPLIER`` times the float32 CPU reference's distance from it: the device is
  no less exact than the reference it is judged by. A device kernel that is wrong is far
  from float64 where the CPU is close, and still fails.

Only models past the tolerance pay for these runs.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import torch

from sweeper.checks.numerics import Diff, Tolerance, compare, compare_grads, cpu_twin
from sweeper.checks.reference import cpu_reference, cpu_rerun

# How many times its own noise a device gap may be (PyTorch's accuracy checks allow a
# small multiple of the reference's error in the same way).
NOISE_MULTIPLIER = 3.0


def output_noise(model: torch.nn.Module, inputs: dict[str, Any], reference: torch.Tensor, *, seed: int,
                 tol: Tolerance, draws: list[Any] | None = None) -> Diff | None:
    """How far a second CPU run's output (same seed, the reference's random draws) is from
    the reference's."""
    again = cpu_reference(cpu_twin(model), inputs, seed=seed, has_labels=False, grads=False,
                          draws=draws or None).output if draws else cpu_rerun(model, inputs, seed=seed).output
    if again is None or again.shape != reference.shape:
        return None
    return compare(again, reference, tol)


def gradient_noise(model: torch.nn.Module, inputs: dict[str, Any], reference: dict[str, torch.Tensor], *, seed: int,
                   has_labels: bool, tol: Tolerance, how: dict[str, Any] | None = None) -> Diff | None:
    """How far a second CPU run's parameter gradients (same seed, and the reference's mode,
    loss and random draws: ``how``) are from the reference's."""
    how = how or {}
    again = cpu_reference(cpu_twin(model), inputs, seed=seed, has_labels=has_labels, grads=True,
                          mode=how.get("mode", "eval"), loss=how.get("loss", "default"),
                          draws=how.get("draws") or None).grads
    return compare_grads(again, reference, tol) if again else None


def within_noise(gap: Diff, noise: Diff | None) -> bool:
    """Whether ``gap`` is within ``NOISE_MULTIPLIER`` times a non-zero ``noise``."""
    return noise is not None and noise.max_abs > 0 and gap.max_abs <= NOISE_MULTIPLIER * noise.max_abs


def over_tolerance(got: Mapping[str, torch.Tensor], ref: Mapping[str, torch.Tensor], tol: Tolerance) -> list[str]:
    """The tensors past the tolerance, judged as ``compare_grads`` judges them (each against
    the largest reference value of all as ``atol`` scale, or its own as ``rtol``)."""
    names = [n for n in ref if n in got and got[n].shape == ref[n].shape]
    scale = max((float(ref[n].detach().float().abs().max()) for n in names if ref[n].numel()), default=0.0)
    floor = Tolerance(atol=tol.atol * scale, rtol=tol.rtol)
    return [n for n in names if not compare(got[n], ref[n], floor).within]


def rounding(got: Mapping[str, torch.Tensor], ref: Mapping[str, torch.Tensor], precise: Mapping[str, torch.Tensor],
             names: list[str], *, declared: Mapping[str, torch.Tensor] | None = None) -> dict[str, Any]:
    """Per tensor of ``names``: the device's and the float32 CPU reference's distance from a
    float64 run; within when every device distance is at most ``NOISE_MULTIPLIER`` times a
    non-zero allowed distance. The allowed distance is the reference's, or, for a device
    that declares a reduced float32 math, the larger of it and that of a CPU run in the
    declared math (``declared``): a TF32 device is allowed a TF32 error, an exact one is not.
    ``within_exact`` says whether exact float32 alone would have been within."""
    judged = [n for n in names if n in precise and precise[n].shape == ref[n].shape]
    device = {n: _distance(got[n], precise[n]) for n in judged}
    cpu = {n: _distance(ref[n], precise[n]) for n in judged}
    allowed = dict(cpu)
    found: dict[str, Any] = {}
    if declared is not None:
        in_math = {n: _distance(declared[n], precise[n]) for n in judged
                   if n in declared and declared[n].shape == ref[n].shape}
        allowed = {n: max(cpu[n], in_math.get(n, 0.0)) for n in judged}
        found["declared_vs_float64"] = max(in_math.values(), default=None)
    worst = max(judged, key=lambda n: device[n] / allowed[n] if allowed[n] > 0 else math.inf if device[n] > 0 else 0.0,
                default=None) if judged else None
    complete = bool(judged) and len(judged) == len(names)

    def within(bound: Mapping[str, float]) -> bool:
        return complete and all(device[n] <= NOISE_MULTIPLIER * bound[n] and (bound[n] > 0 or device[n] == 0)
                                for n in judged)

    return {
        "device_vs_float64": max(device.values(), default=None),
        "cpu_vs_float64": max(cpu.values(), default=None),
        **found,
        "worst": worst,
        "within": within(allowed),
        "within_exact": within(cpu),
    }


def _distance(a: torch.Tensor, b: torch.Tensor) -> float:
    value = float((a.detach().to("cpu", torch.float64) - b.detach().to("cpu", torch.float64)).abs().max())
    return math.inf if math.isnan(value) else value


def finding(stage: str, tensor: str, gap: Diff, noise: Diff | None,
            float64: dict[str, Any] | None = None) -> dict[str, Any]:
    """What the record keeps of one noise check (``numerics.within_noise`` or ``numerics.noise``):
    the run-to-run measure and, when it was made, the float64 one (``float64``)."""
    found: dict[str, Any] = {
        "stage": stage,
        "tensor": tensor,
        "device_max_abs": gap.max_abs,
        "noise_max_abs": noise.max_abs if noise is not None else None,
        "multiplier": NOISE_MULTIPLIER,
        "within": within_noise(gap, noise),
    }
    if float64 is not None:
        found["float64"] = float64
        found["within"] = found["within"] or bool(float64.get("within"))
    return found
