"""The device run twice: does the device give the same result for the same seed and inputs?

The only run-to-run control used to be a second CPU run, so a device whose own results
move between two runs (atomics in a backward, an unstable kernel) was judged as a numerics
gap, or passed by luck. As PyTorch's accuracy harness ("eager two runs differ"), each
compared device run (the forward's output, the backward's gradients) is made a second
time on the device, with the same seed, inputs, mode, loss and random draws:

- the two device runs agree (the usual case): nothing more is run; ``numerics.device_runs``
  keeps the spread (0);
- they differ by no more than ``NOISE_MULTIPLIER`` times the CPU's own run-to-run spread (a
  second CPU run, same seed and draws: ``selfnoise``, made only now): the model moves from
  run to run wherever it runs, and that is the model's, not the device's;
- they differ by more: the finding ``numerics.device_nondeterministic`` keeps its size,
  and the stage's numerics judge the device against the larger of the two spreads
  (``larger``); when the device's own spread is past the tolerance, the model cannot be
  judged at all: ``DeviceNondeterministicError``, an outcome of its own (neither a pass
  nor a numerics failure).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch

from sweeper.checks import randomness
from sweeper.checks.numerics import Diff, Tolerance, compare, compare_grads, seeded
from sweeper.checks.reference import first_float, scalar_loss
from sweeper.checks.selfnoise import NOISE_MULTIPLIER
from sweeper.checks.training import mode_context
from sweeper.records import NUMERICS_TENSORS, ReasonKind
from sweeper.settings.errors import SweeperError


class DeviceNondeterministicError(SweeperError):
    """The device's two runs with the same seed and inputs differ past the tolerance."""

    reason_kind = ReasonKind.DEVICE_NONDETERMINISTIC


def output_again(model: torch.nn.Module, inputs: dict[str, Any], *, seed: int, draws: list[Any] | None) -> torch.Tensor | None:
    """The forward run a second time on the device (eval mode, the same seed and draws)."""
    model.eval()
    with torch.no_grad(), seeded(seed), randomness.replayed(draws, judge=False):
        return first_float(model(**inputs))


def gradients_again(model: torch.nn.Module, inputs: dict[str, Any], *, seed: int, has_labels: bool,
                    how: dict[str, Any]) -> dict[str, torch.Tensor]:
    """The training step run a second time on the device; its parameter gradients. The first
    run's gradient tensors are left as they were (``zero_grad(set_to_none=True)``)."""
    model.zero_grad(set_to_none=True)
    with mode_context(how.get("mode", "train"), model), seeded(seed), \
            randomness.replayed(how.get("draws"), judge=False):
        output = model(**inputs)
        scalar_loss(output, has_labels=has_labels, kind=how.get("loss", "default")).backward()
    return {n: p.grad for n, p in model.named_parameters() if p.grad is not None}


def spread(stage: str, first: dict[str, torch.Tensor], second: dict[str, torch.Tensor] | torch.Tensor | None,
           tol: Tolerance) -> Diff | None:
    """How far the second device run is from the first (None when it gave nothing to compare)."""
    if stage == "forward":
        got = first.get("output")
        if got is None or not isinstance(second, torch.Tensor) or second.shape != got.shape:
            return None
        return compare(second, got, tol)
    return compare_grads(second, first, tol) if isinstance(second, dict) and second else None


def judge(numerics: dict[str, Any], stage: str, device: Diff | None, tol: Tolerance,
          cpu_noise: Callable[[], Diff | None]) -> None:
    """Record the device's run-to-run spread in ``numerics``; past the CPU's own spread, the
    ``device_nondeterministic`` finding; past the tolerance too, raise."""
    if device is None:
        return
    numerics.setdefault("device_runs", {})[stage] = device.to_dict()
    if device.max_abs == 0:
        return
    try:
        cpu = cpu_noise()
    except Exception as exc:  # noqa: BLE001 - no CPU rerun: the device's spread is judged against 0
        cpu, numerics["device_runs"]["cpu_failed"] = None, f"{type(exc).__name__}: {str(exc)[:200]}"
    cpu_abs = cpu.max_abs if cpu is not None else 0.0
    if device.max_abs <= NOISE_MULTIPLIER * cpu_abs:  # as the CPU moves: the model's own, not the device's
        return
    found = {"stage": stage, "tensor": NUMERICS_TENSORS[stage], "device_max_abs": device.max_abs,
             "device_max_rel": device.max_rel, "cpu_max_abs": cpu_abs, "within_tolerance": device.within}
    if device.where is not None:
        found["where"] = device.where
    numerics.setdefault("device_nondeterministic", {})[stage] = found
    if not device.within:
        raise DeviceNondeterministicError(
            f"the device's two runs of the {stage} ({NUMERICS_TENSORS[stage]}) with the same seed and inputs differ "
            f"by {device.max_abs:.3g} (relative {device.max_rel:.3g}), past the tolerance (atol {tol.atol:g}, "
            f"rtol {tol.rtol:g}); the CPU's own two runs differ by {cpu_abs:.3g}: the device cannot be judged")


def larger(noise: Diff | None, numerics: dict[str, Any], stage: str) -> Diff | None:
    """The run-to-run spread a device gap is judged against: the CPU's (``noise``) or the
    device's own, whichever is larger."""
    found = (numerics.get("device_nondeterministic") or {}).get(stage)
    if not isinstance(found, dict):
        return noise
    device = float(found["device_max_abs"])
    if noise is not None and noise.max_abs >= device:
        return noise
    return Diff(max_abs=device, max_rel=float(found["device_max_rel"]), within=True, where="device run to run")
