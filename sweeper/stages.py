"""The stages of one model's check, each a small function over a shared ``StageContext``.

Stages raise on failure; ``check.check_model`` catches and classifies in one place. Each
stage leaves what the next one needs on the context (model, inputs, output) and what the
record needs (fallbacks, graph breaks, numerics) in ``ctx.findings``.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import torch

from sweeper.config import SweepConfig
from sweeper.devices.base import Device
from sweeper.errors import NoGradientError, NumericsError, SweeperError
from sweeper.materialize import Built, materialize
from sweeper.materialize.pristine import pristine
from sweeper.records import ModelRef, Reason, ReasonKind
from sweeper.tied_weights import broken_groups, swap_params_on_conversion, tied_groups


class UntiedWeightsError(SweeperError):
    """``.to(device)`` turned tied parameters into separate copies (a PrivateUse1 effect)."""

    reason_kind = ReasonKind.UNTIED_WEIGHTS


@dataclass
class StageContext:
    """What stages share for one model."""

    ref: ModelRef
    cfg: SweepConfig
    device: Device
    built: Built | None = None
    inputs: dict[str, Any] = field(default_factory=dict)
    output: Any = None
    reference: torch.Tensor | None = None
    findings: dict[str, Any] = field(default_factory=dict)
    soft_reasons: list[Reason] = field(default_factory=list)


def load(ctx: StageContext) -> None:
    """Build the model and inputs on the CPU; keep a CPU reference output for numerics."""
    ctx.built = materialize(ctx.ref, ctx.cfg)
    if ctx.device.torch_device != "cpu" and "forward" in ctx.cfg.stages:
        # pristine: caches the CPU forward fills stay off the model the device runs.
        with torch.no_grad(), pristine(ctx.built.model):
            ctx.reference = _first_float(ctx.built.model(**ctx.built.inputs))
            ctx.reference = ctx.reference.detach().clone() if ctx.reference is not None else None


def to_device(ctx: StageContext) -> None:
    """Move model and inputs; detect tied weights that the move untied."""
    built = _built(ctx)
    groups = tied_groups(built.model)
    with swap_params_on_conversion(ctx.cfg.retie_weights and bool(groups)):
        built.model.to(ctx.device.torch_device)
    ctx.inputs = {k: _move(v, ctx.device.torch_device) for k, v in built.inputs.items()}
    ctx.device.synchronize()
    broken = broken_groups(built.model, groups)
    if broken:
        # The model still runs, only wrong for training: re-tie so later stages measure
        # everything else, and report the untying as this stage's failure.
        with contextlib.suppress(Exception):
            built.model.tie_weights()
        raise UntiedWeightsError(
            f".to({ctx.device.torch_device!r}) untied {len(broken)} tied parameter group(s): "
            + "; ".join(" = ".join(g) for g in broken[:3])
            + " (fix: --retie-weights)"
        )
    if groups and ctx.cfg.retie_weights:
        ctx.findings["retied_weights"] = True


def forward(ctx: StageContext) -> None:
    """Run the model on the device; compare with the CPU reference."""
    built = _built(ctx)
    ctx.output = built.model(**ctx.inputs)
    ctx.device.synchronize()
    got = _first_float(ctx.output)
    if ctx.reference is not None and got is not None and got.shape == ctx.reference.shape:
        diff = (got.detach().float().cpu() - ctx.reference.float()).abs()
        max_diff = float(diff.max()) if diff.numel() else 0.0
        ctx.findings["max_abs_diff"] = max_diff
        scale = max(1.0, float(ctx.reference.float().abs().max()) if ctx.reference.numel() else 1.0)
        if not max_diff <= ctx.cfg.atol * scale:
            raise NumericsError(f"max |device - cpu| = {max_diff:.3g} exceeds {ctx.cfg.atol:g} x {scale:.3g}")


def backward(ctx: StageContext) -> None:
    """Backpropagate a scalar loss; check that gradients reached the parameters."""
    built = _built(ctx)
    built.model.zero_grad(set_to_none=True)
    loss = scalar_loss(ctx.output, has_labels=built.has_labels)
    loss.backward()
    ctx.device.synchronize()
    params = [p for p in built.model.parameters() if p.requires_grad]
    with_grad = sum(1 for p in params if p.grad is not None)
    ctx.findings["params_with_grad"] = f"{with_grad}/{len(params)}"
    if params and with_grad == 0:
        raise NoGradientError("backward ran but no parameter received a gradient")


def compile_stage(ctx: StageContext) -> None:
    """torch.compile forward + backward with the device's (or the chosen) backend."""
    import torch._dynamo
    from torch._dynamo.utils import counters

    built = _built(ctx)
    backend = ctx.cfg.compile_backend or ctx.device.compile_backend
    torch._dynamo.reset()
    counters.clear()
    compiled = torch.compile(built.model, backend=backend)
    built.model.zero_grad(set_to_none=True)
    try:
        output = compiled(**ctx.inputs)
        scalar_loss(output, has_labels=built.has_labels).backward()
        ctx.device.synchronize()
    finally:
        breaks = counters.get("graph_break", {})
        ctx.findings["graph_breaks"] = int(sum(breaks.values()))
        ctx.findings["graph_break_reasons"] = sorted(str(r)[:300] for r in breaks)[:20]
        ctx.findings["compile_backend"] = backend


def scalar_loss(output: Any, *, has_labels: bool) -> torch.Tensor:
    """The model's own loss when labels were given, else the mean of its float outputs."""
    loss = getattr(output, "loss", None) if has_labels else None
    if isinstance(loss, torch.Tensor) and loss.requires_grad:
        return loss if loss.dim() == 0 else loss.mean()
    parts = [t.float().mean() for t in _float_tensors(output) if t.requires_grad and t.numel()]
    if not parts:
        raise NoGradientError("the model returned no float output that depends on its parameters")
    return torch.stack(parts).sum()


def _built(ctx: StageContext) -> Built:
    if ctx.built is None:
        raise RuntimeError("stage ran before load")
    return ctx.built


def _move(value: Any, device: str) -> Any:
    if isinstance(value, torch.Tensor):
        return value.to(device)
    if isinstance(value, (list, tuple)):
        return type(value)(_move(v, device) for v in value)
    if isinstance(value, dict):
        return {k: _move(v, device) for k, v in value.items()}
    return value


def _float_tensors(value: Any, depth: int = 0) -> Iterator[torch.Tensor]:
    if depth > 4:
        return
    if isinstance(value, torch.Tensor):
        if value.is_floating_point():
            yield value
    elif isinstance(value, dict) or hasattr(value, "to_tuple"):
        items = value.values() if isinstance(value, dict) else value.to_tuple()
        for item in items:
            yield from _float_tensors(item, depth + 1)
    elif isinstance(value, (list, tuple)):
        for item in value:
            yield from _float_tensors(item, depth + 1)


def _first_float(output: Any) -> torch.Tensor | None:
    for tensor in _float_tensors(output):
        return tensor
    return None
