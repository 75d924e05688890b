"""CPU runs that device results are judged against.

- ``cpu_reference``: the model, before it moves to the device, run once on the CPU: its
  first float output and (for the backward stage) its parameter gradients. The same model
  object serves the reference and the device run, so nothing is built twice.
- ``cpu_rerun``: a second CPU run, with another seed, on a CPU copy of the model already
  on the device: tells an output that moves with the RNG state from a device that is off.
- ``float32_run``/``precise_run``: the same model and inputs in a wider format on the CPU
  (float32 for a reduced-precision run, float64 for a float32 one): the yardstick that
  measures the reference's own rounding error.

Only the reference is paid by every model; the other two run only when a comparison is
over tolerance.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import torch

from sweeper.checks.numerics import cpu_twin, seeded
from sweeper.libraries.transformers.inputs import cast_floating
from sweeper.settings.errors import NoGradientError


@dataclass
class Run:
    """What one run produced: its first float output and, when asked, its gradients."""

    output: torch.Tensor | None
    grads: dict[str, torch.Tensor] | None = None
    note: str | None = None  # why gradients are missing, when they are


def cpu_reference(model: torch.nn.Module, inputs: dict[str, Any], *, seed: int, has_labels: bool, grads: bool) -> Run:
    """Run ``model`` (on the CPU, in eval mode) once; gradients are left cleared."""
    model.eval()
    with torch.set_grad_enabled(grads), seeded(seed):
        output = model(**inputs)
    run = Run(_detached(first_float(output)))
    if not grads:
        return run
    try:
        scalar_loss(output, has_labels=has_labels).backward()
        run.grads = {n: p.grad.detach().clone() for n, p in model.named_parameters() if p.grad is not None}
    except Exception as exc:  # noqa: BLE001 - the device's backward stage reports its own error
        run.note = f"no CPU gradients: {type(exc).__name__}"
    finally:
        model.zero_grad(set_to_none=True)
    return run


def cpu_rerun(model: torch.nn.Module, inputs: dict[str, Any], *, seed: int) -> Run:
    """A no-grad CPU run of a copy of ``model`` (which may sit on the device)."""
    twin = cpu_twin(model)
    with torch.no_grad(), seeded(seed):
        return Run(_detached(first_float(twin(**inputs))))


def float32_run(model: torch.nn.Module, inputs: dict[str, Any], *, seed: int, has_labels: bool, grads: bool) -> Run:
    """A CPU copy of ``model`` and its inputs in float32, run like the reference."""
    return precise_run(model, inputs, dtype=torch.float32, seed=seed, has_labels=has_labels, grads=grads)


def precise_run(model: torch.nn.Module, inputs: dict[str, Any], *, dtype: torch.dtype, seed: int, has_labels: bool,
                grads: bool) -> Run:
    """A CPU copy of ``model`` and its inputs in ``dtype`` (float32 for a reduced-precision
    sweep, float64 for a float32 one), run like the reference."""
    twin = cpu_twin(model).to(dtype)
    return cpu_reference(twin, cast_floating(inputs, dtype), seed=seed, has_labels=has_labels, grads=grads)


def scalar_loss(output: Any, *, has_labels: bool) -> torch.Tensor:
    """The model's own loss when labels were given, else the mean of its float outputs."""
    loss = getattr(output, "loss", None) if has_labels else None
    if isinstance(loss, torch.Tensor) and loss.requires_grad:
        return loss if loss.dim() == 0 else loss.mean()
    parts = [t.float().mean() for t in float_tensors(output) if t.requires_grad and t.numel()]
    if not parts:
        raise NoGradientError("the model returned no float output that depends on its parameters")
    return torch.stack(parts).sum()


def float_tensors(value: Any, depth: int = 0) -> Iterator[torch.Tensor]:
    """Every floating tensor in a model output (tensors, tuples, dicts, ModelOutputs)."""
    if depth > 4:
        return
    if isinstance(value, torch.Tensor):
        if value.is_floating_point():
            yield value
    elif isinstance(value, dict) or hasattr(value, "to_tuple"):
        items = value.values() if isinstance(value, dict) else value.to_tuple()
        for item in items:
            yield from float_tensors(item, depth + 1)
    elif isinstance(value, (list, tuple)):
        for item in value:
            yield from float_tensors(item, depth + 1)


def first_float(output: Any) -> torch.Tensor | None:
    """The first floating tensor of a model output (the loss when there is one)."""
    for tensor in float_tensors(output):
        return tensor
    return None


def _detached(tensor: torch.Tensor | None) -> torch.Tensor | None:
    return tensor.detach().clone() if tensor is not None else None
