"""CPU runs that device results are judged against.

- ``cpu_reference``: the model, before it moves to the device, run once on the CPU: its
  first float output and (for the backward stage) its parameter gradients. The same model
  object serves the reference and the device run, so nothing is built twice.
- ``cpu_rerun``: a second CPU run, with another seed, on a CPU copy of the model already
  on the device: tells an output that moves with the RNG state from a device that is off.
- ``precise_run``: the same model and inputs in a wider format on the CPU
  (float32 for a reduced-precision run, float64 for a float32 one): the yardstick that
  measures the reference's own rounding error.

Only the reference is paid by every model; the other two run only when a comparison is
over tolerance.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import torch

from sweeper.checks import randomness
from sweeper.checks.declared import declared_math
from sweeper.checks.numerics import cpu_twin, seeded
from sweeper.checks.randomness import Draw
from sweeper.checks.training import mode_context
from sweeper.devices.precision import Float32Math
from sweeper.libraries.outputs import first_float, float_tensors
from sweeper.libraries.transformers.inputs import cast_floating
from sweeper.settings.errors import NoGradientError


@dataclass
class Run:
    """What one run produced: its first float output and, when asked, its gradients; the
    random ops it drew from (``randomness.Draw``), when any."""

    output: torch.Tensor | None
    grads: dict[str, torch.Tensor] | None = None
    note: str | None = None  # why gradients are missing, when they are
    draws: list[Draw] = field(default_factory=list)


def cpu_reference(model: torch.nn.Module, inputs: dict[str, Any], *, seed: int, has_labels: bool, grads: bool,
                  mode: str = "eval", loss: str = "default", draws: list[Draw] | None = None,
                  math: Float32Math | None = None, backward: bool | None = None) -> Run:
    """Run ``model`` on the CPU once, in ``mode`` (``eval``, or ``train`` as a training step
    runs: ``training.training_step``), with grad enabled when ``grads``; its gradients of
    the ``loss`` when ``backward`` (default: ``grads``), left cleared.

    ``draws``: feed the run these random draws (a copy of the reference run in another
    format). Without them, a run that drew from the CPU's generator runs again under a tape
    (same seed, same draws) and the result names what it drew (``Run.draws``). ``math``:
    compute matmuls and convolutions in a device's declared float32 math."""
    backward = grads if backward is None else backward
    run, drew = _once(model, inputs, seed=seed, has_labels=has_labels, grads=grads, backward=backward, mode=mode,
                      loss=loss, draws=draws, math=math, tape=None)
    if drew and draws is None:
        with randomness.taped(model, "backward" if backward else "forward") as tape:
            run, _ = _once(model, inputs, seed=seed, has_labels=has_labels, grads=grads, backward=backward, mode=mode,
                           loss=loss, draws=None, math=math, tape=tape)
        run.draws = tape.draws
    return run


def _once(model: torch.nn.Module, inputs: dict[str, Any], *, seed: int, has_labels: bool, grads: bool,
          backward: bool, mode: str, loss: str, draws: list[Draw] | None, math: Float32Math | None,
          tape: Any) -> tuple[Run, bool]:
    """One CPU run; whether it moved the CPU generator (drew random numbers)."""
    with mode_context(mode, model), torch.set_grad_enabled(grads), seeded(seed), declared_math(math), \
            randomness.replayed(draws, judge=False):
        before = randomness.generator_state()
        output = model(**inputs)
        # A gradients' run keeps no copy of its output: nothing compares it, and a large
        # output held through backward is memory the device run never needs.
        run = Run(None if backward else _detached(first_float(output)))
        if backward:
            try:
                scalar_loss(output, has_labels=has_labels, kind=loss).backward()
                # The gradients themselves, not copies: zero_grad(set_to_none) below leaves
                # them to this run alone, and a copy would hold a second set of them.
                run.grads = {n: p.grad.detach() for n, p in model.named_parameters() if p.grad is not None}
            except Exception as exc:  # noqa: BLE001 - the device's backward stage reports its own error
                run.note = f"no CPU gradients: {type(exc).__name__}"
            finally:
                model.zero_grad(set_to_none=True)
        drew = not torch.equal(before, randomness.generator_state())
    return run, drew


def cpu_rerun(model: torch.nn.Module, inputs: dict[str, Any], *, seed: int) -> Run:
    """A no-grad CPU run of a copy of ``model`` (which may sit on the device)."""
    twin = cpu_twin(model)
    with torch.no_grad(), seeded(seed):
        return Run(_detached(first_float(twin(**inputs))))


def precise_run(model: torch.nn.Module, inputs: dict[str, Any], *, dtype: torch.dtype, seed: int, has_labels: bool,
                grads: bool, **how: Any) -> Run:
    """A CPU copy of ``model`` and its inputs in ``dtype`` (float32 for a reduced-precision
    sweep, float64 for a float32 one), run like the reference (``how``: its mode, loss,
    draws and math, as ``cpu_reference`` takes them)."""
    twin = cpu_twin(model).to(dtype)
    return cpu_reference(twin, cast_floating(inputs, dtype), seed=seed, has_labels=has_labels, grads=grads, **how)


# A loss whose gradients all but vanish (the mean of a normalised output is a constant)
# is replaced by a fixed random projection of every output: its gradient with respect to
# each output element is a fixed N(0, 1) draw, which no normalisation cancels.
LOSSES = ("default", "projection")
_PROJECTION_SEED = 20261204


def scalar_loss(output: Any, *, has_labels: bool, kind: str = "default") -> torch.Tensor:
    """``default``: the model's own loss when labels were given, else the mean of its float
    outputs. ``projection``: each float output dotted with a fixed random tensor of its
    shape (drawn from a private generator, the same on every device) over sqrt(its size)."""
    if kind == "projection":
        return _projection(output)
    loss = getattr(output, "loss", None) if has_labels else None
    if isinstance(loss, torch.Tensor) and loss.requires_grad:
        return loss if loss.dim() == 0 else loss.mean()
    parts = [t.float().mean() for t in float_tensors(output) if t.requires_grad and t.numel()]
    if not parts:
        raise NoGradientError("the model returned no float output that depends on its parameters")
    return torch.stack(parts).sum()


def _projection(output: Any) -> torch.Tensor:
    generator = torch.Generator().manual_seed(_PROJECTION_SEED)
    parts = []
    for tensor in float_tensors(output):
        if tensor.requires_grad and tensor.numel():
            weights = torch.randn(tensor.shape, generator=generator, dtype=torch.float32)
            parts.append((tensor.float() * weights.to(tensor.device)).sum() / tensor.numel() ** 0.5)
    if not parts:
        raise NoGradientError("the model returned no float output that depends on its parameters")
    return torch.stack(parts).sum()


def _detached(tensor: torch.Tensor | None) -> torch.Tensor | None:
    return tensor.detach().clone() if tensor is not None else None
