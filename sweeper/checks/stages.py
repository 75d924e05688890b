"""The stages of one model's check, each a small function over a shared ``StageContext``.

Stages raise on failure; ``check.check_model`` catches and classifies in one place. Each
stage leaves what the next one needs on the context (model, inputs, output) and what the
record needs (fallbacks, graph breaks, numerics) in ``ctx.findings``.
"""

from __future__ import annotations

import contextlib
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import torch

from sweeper.checks import backend_breaks, selfnoise
from sweeper.checks.classify import graph_break_cause
from sweeper.checks.gcpause import fewer_collections
from sweeper.checks.lognames import names_when_logged
from sweeper.checks.numerics import Diff, Tolerance, compare, compare_grads, format_error, has_nan, seeded, tolerance_for
from sweeper.checks.reference import Run, cpu_reference, cpu_rerun, first_float, float32_run, precise_run, scalar_loss
from sweeper.checks.tied_weights import broken_groups, swap_params_on_conversion, tied_groups
from sweeper.devices.base import Device
from sweeper.libraries import build as build_model
from sweeper.libraries.transformers import Built
from sweeper.libraries.transformers.pristine import pristine
from sweeper.records import NUMERICS_TENSORS, ModelRef, Reason, ReasonKind
from sweeper.settings.config import SweepConfig
from sweeper.settings.errors import NoGradientError, NonFiniteReferenceError, NumericsError, SweeperError


class UntiedWeightsError(SweeperError):
    """``.to(device)`` turned tied parameters into separate copies (a PrivateUse1 effect)."""

    reason_kind = ReasonKind.UNTIED_WEIGHTS


@dataclass
class StageContext:
    """What stages share for one model."""

    ref: ModelRef
    cfg: SweepConfig
    device: Device
    # The stages that run (the selected ones and those they need, ``check.selected_stages``).
    runs: frozenset[str] = frozenset()
    built: Built | None = None
    inputs: dict[str, Any] = field(default_factory=dict)
    output: Any = None
    reference: torch.Tensor | None = None  # the CPU run's first float output
    reference_grads: dict[str, torch.Tensor] | None = None  # the CPU run's parameter gradients
    float32: Run | None = None  # a float32 CPU run, made only when a reduced-precision check needs it
    float64: Run | None = None  # a float64 CPU run, made only when a float32 gap past noise needs it
    findings: dict[str, Any] = field(default_factory=dict)
    soft_reasons: list[Reason] = field(default_factory=list)
    # Told each stage's name as it starts (a worker's crash breadcrumbs, so a record of a
    # process that died can name the stage); None tells no one.
    on_stage: Callable[[str], None] | None = None
    # Set on the CPU control of a worker overrun: the stages whose CPU reference its device
    # run held. The control runs and holds the same reference (on the CPU too), so both
    # runs carry the same host-side work under the same memory limit.
    reference_of: frozenset[str] | None = None
    # The component this context checks, of a model built as several (a diffusers
    # pipeline's ``Built.components``); None: the model itself.
    part: str | None = None


def load(ctx: StageContext) -> None:
    """Build the model and inputs on the CPU; run the CPU reference for numerics. A model
    of several components takes no reference of its own: each component's check does."""
    if ctx.built is None:
        ctx.built = build_model(ctx.ref, ctx.cfg)
        if ctx.part is not None:  # a component's control: built afresh with its pipeline
            ctx.built = ctx.built.components[ctx.part]
    if ctx.built.components:
        return
    # Whatever runs the forward compares it: by the stages that run, not only those named.
    wanted = ctx.reference_of or ctx.runs or frozenset(ctx.cfg.check.stages)
    if (ctx.device.torch_device != "cpu" or ctx.reference_of is not None) and wanted & {"forward", "backward"}:
        # pristine: caches the CPU forward fills stay off the model the device runs.
        with pristine(ctx.built.model):
            run = cpu_reference(ctx.built.model, ctx.built.inputs, seed=ctx.cfg.materialise.seed,
                                has_labels=ctx.built.has_labels, grads="backward" in wanted)
        ctx.reference, ctx.reference_grads = run.output, run.grads
        if run.note:
            _numerics(ctx, "backward_reference", run.note)


def to_device(ctx: StageContext) -> None:
    """Move model and inputs; detect tied weights that the move untied."""
    built = _built(ctx)
    groups = tied_groups(built.model)
    with swap_params_on_conversion(ctx.cfg.device.retie_weights and bool(groups)):
        built.model.to(ctx.device.torch_device)
    ctx.inputs = {k: _move(v, ctx.device.torch_device) for k, v in built.inputs.items()}
    ctx.device.synchronize()
    broken = broken_groups(built.model, groups)
    if broken:
        # The model still runs, only wrong for training: re-tie so later stages measure
        # everything else, and report the untying as this stage's failure.
        with contextlib.suppress(Exception):
            built.model.tie_weights()
        # Ties the re-tie missed: their gradients are split, so the gradient check skips them.
        ctx.findings["untied_params"] = [n for g in broken_groups(built.model, groups) for n in g]
        raise UntiedWeightsError(
            f".to({ctx.device.torch_device!r}) untied {len(broken)} tied parameter group(s): "
            + "; ".join(" = ".join(g) for g in broken[:3])
            + " (fix: --retie-weights)"
        )
    if groups and ctx.cfg.device.retie_weights:
        ctx.findings["retied_weights"] = True


def forward(ctx: StageContext) -> None:
    """Run the model on the device (eval mode, the CPU run's seed); compare with the CPU."""
    built = _built(ctx)
    built.model.eval()
    with seeded(ctx.cfg.materialise.seed):
        ctx.output = built.model(**ctx.inputs)
    ctx.device.synchronize()
    got = first_float(ctx.output)
    if ctx.reference is None or got is None or got.shape != ctx.reference.shape:
        return
    if has_nan(ctx.reference):
        # (Infinities are compared: -inf is how many models mask logits.)
        raise NonFiniteReferenceError("the CPU reference output has NaN: the model's own result, so the "
                                      "device's cannot be judged against it")
    tol = tolerance_for(ctx.cfg.device.dtype, atol=ctx.cfg.check.atol)
    diff = compare(got, ctx.reference, tol)
    _numerics(ctx, "forward", diff)
    _numerics(ctx, "tolerance", tol.to_dict())
    ctx.findings["max_abs_diff"] = diff.max_abs
    if diff.within or _nondeterministic(ctx, tol) or _noise(ctx, "forward", diff, tol, {"output": got}) or \
            _format_error(ctx, "forward", {"output": got}):
        return
    _over(ctx, "forward", diff)
    raise NumericsError(f"max |device - cpu| = {diff.max_abs:.3g} exceeds max({tol.atol:g}, {tol.rtol:g} x "
                        f"max|cpu|) (relative {diff.max_rel:.3g})")


def _nondeterministic(ctx: StageContext, tol: Tolerance) -> bool:
    """Whether a second CPU run, with another seed, differs from the first past ``tol``.

    Another seed, because a device's generator need not draw the CPU's numbers for the
    same seed: an output that moves with the RNG state (or with kernels that are not
    deterministic) cannot judge the device. Recorded, not a failure.
    """
    built = _built(ctx)
    assert ctx.reference is not None
    try:
        again = cpu_rerun(built.model, built.inputs, seed=ctx.cfg.materialise.seed + 1).output
    except Exception as exc:  # noqa: BLE001 - an inconclusive control leaves the verdict to the device run
        _numerics(ctx, "cpu_rerun", f"failed: {type(exc).__name__}: {str(exc)[:200]}")
        return False
    if again is None or again.shape != ctx.reference.shape:
        return False
    diff = compare(again, ctx.reference, tol)
    if diff.within:
        return False
    _numerics(ctx, "nondeterministic", diff)
    return True




def _over(ctx: StageContext, stage: str, diff: Diff) -> None:
    """Record, as a field, which stage and tensor went past the tolerance."""
    _numerics(ctx, "over", {"stage": stage, "tensor": NUMERICS_TENSORS[stage], **diff.to_dict()})


def _noise(ctx: StageContext, stage: str, diff: Diff, tol: Tolerance, got: dict[str, torch.Tensor]) -> bool:
    """Whether a gap past the tolerance is within the CPU reference's own noise (a second
    CPU run, same seed; for float32, its rounding against float64: ``selfnoise``);
    recorded either way, a failure only when not."""
    built = _built(ctx)
    seed = ctx.cfg.materialise.seed
    try:
        if stage == "forward":
            assert ctx.reference is not None
            noise = selfnoise.output_noise(built.model, built.inputs, ctx.reference, seed=seed, tol=tol)
        else:
            noise = selfnoise.gradient_noise(built.model, built.inputs, ctx.reference_grads or {}, seed=seed,
                                             has_labels=built.has_labels, tol=tol)
    except Exception as exc:  # noqa: BLE001 - no second run: the comparison stands
        _numerics(ctx, "noise", {"stage": stage, "failed": f"{type(exc).__name__}: {str(exc)[:200]}"})
        return False
    rounding = None if selfnoise.within_noise(diff, noise) else _rounding(ctx, stage, got, tol)
    found = selfnoise.finding(stage, NUMERICS_TENSORS[stage], diff, noise, rounding)
    _numerics(ctx, "within_noise" if found["within"] else "noise", found)
    return bool(found["within"])


def _rounding(ctx: StageContext, stage: str, got: dict[str, torch.Tensor], tol: Tolerance) -> dict[str, Any] | None:
    """For a float32 sweep: the device's and the CPU reference's distance from a float64 CPU
    run, on the tensors past the tolerance (``selfnoise.rounding``). One float64 run serves
    forward and backward; None when not a float32 sweep or the float64 run fails (recorded)."""
    if ctx.cfg.device.dtype != "float32":
        return None
    built = _built(ctx)
    if ctx.float64 is None:
        try:
            ctx.float64 = precise_run(built.model, built.inputs, dtype=torch.float64, seed=ctx.cfg.materialise.seed,
                                      has_labels=built.has_labels, grads=ctx.reference_grads is not None)
        except Exception as exc:  # noqa: BLE001 - no yardstick: the comparison stands
            return {"failed": f"{type(exc).__name__}: {str(exc)[:200]}", "within": False}
    if stage == "forward":
        precise, ref = {"output": ctx.float64.output}, {"output": ctx.reference}
    else:
        precise, ref = ctx.float64.grads or {}, ctx.reference_grads or {}
    if any(v is None for v in (*precise.values(), *ref.values())) or not precise:
        return None
    over = ["output"] if stage == "forward" else selfnoise.over_tolerance(got, ref, tol)
    return selfnoise.rounding(got, ref, precise, over)


def _format_error(ctx: StageContext, stage: str, got: dict[str, torch.Tensor]) -> bool:
    """For a reduced-precision sweep: whether the difference is the format's rounding
    (see ``numerics.FORMAT_MULTIPLIER``). One float32 CPU run serves forward and backward."""
    if ctx.cfg.device.dtype == "float32":
        return False
    built = _built(ctx)
    if ctx.float32 is None:
        try:
            ctx.float32 = float32_run(built.model, built.inputs, seed=ctx.cfg.materialise.seed,
                                      has_labels=built.has_labels, grads=ctx.reference_grads is not None)
        except Exception as exc:  # noqa: BLE001 - no yardstick: the comparison stands
            _numerics(ctx, "float32_run", f"failed: {type(exc).__name__}: {str(exc)[:200]}")
            return False
    if stage == "forward":
        precise, ref = {"output": ctx.float32.output}, {"output": ctx.reference}
    else:
        precise, ref = ctx.float32.grads or {}, ctx.reference_grads or {}
    if any(v is None for v in (*precise.values(), *ref.values())) or not precise:
        return False
    verdict = format_error(got, ref, precise)
    ctx.findings.setdefault("numerics", {}).setdefault("float32", {})[stage] = verdict
    return bool(verdict["within"])


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
    _judge_gradients(ctx)


def _judge_gradients(ctx: StageContext) -> None:
    """Compare parameter gradients with the CPU run's (same model, inputs, seed)."""
    if not ctx.reference_grads:
        return
    untied = set(ctx.findings.get("untied_params", ()))  # already the untied_weights blocker
    got = {n: p.grad for n, p in _built(ctx).model.named_parameters() if p.grad is not None and n not in untied}
    tol = tolerance_for(ctx.cfg.device.dtype, atol=ctx.cfg.check.atol)
    diff = compare_grads(got, ctx.reference_grads, tol)
    if diff is None:
        return
    if has_nan(ctx.reference_grads):
        raise NonFiniteReferenceError("the CPU reference gradients have NaN: the model's own result, so the "
                                      "device's cannot be judged against them")
    _numerics(ctx, "backward", diff)
    if diff.within or "nondeterministic" in ctx.findings.get("numerics", {}) or _noise(ctx, "backward", diff, tol, got) \
            or _format_error(ctx, "backward", got):
        return
    _over(ctx, "backward", diff)
    raise NumericsError(f"gradients: max |device - cpu| = {diff.max_abs:.3g} (relative {diff.max_rel:.3g}, "
                        f"worst {diff.where}) exceeds max({tol.atol:g} x max|cpu grad|, {tol.rtol:g} x the "
                        "parameter's max|cpu grad|)")


def compile_stage(ctx: StageContext) -> None:
    """torch.compile forward + backward with the device's (or the chosen) backend, as a
    user compiles: Dynamo's defaults, so a data-dependent op breaks the graph and runs
    eagerly on the device. ``whole_graph`` (the same for the device run and its CPU
    control, which share these settings) asks for one graph with such ops captured into
    it, so the compiler sees them and a refusal names the op."""
    import torch._dynamo
    from torch._dynamo.utils import counters

    built = _built(ctx)
    backend = ctx.cfg.device.compile_backend or ctx.device.compile_backend
    whole = ctx.cfg.device.whole_graph
    torch._dynamo.reset()
    counters.clear()
    compiled = torch.compile(built.model, backend=backend, fullgraph=whole)
    built.model.zero_grad(set_to_none=True)
    capture = torch._dynamo.config.patch(capture_dynamic_output_shape_ops=whole)
    fallbacks: Counter[str] = Counter()
    try:
        # tracing's objects live until it ends; function names are looked up for debug logs only
        with capture, fewer_collections(), names_when_logged(), backend_breaks.counted(fallbacks):
            output = compiled(**ctx.inputs)
            scalar_loss(output, has_labels=built.has_labels).backward()
            ctx.device.synchronize()
    finally:
        breaks = counters.get("graph_break", {})
        ctx.findings["graph_breaks"] = int(sum(breaks.values())) + sum(fallbacks.values())
        ctx.findings["graph_break_reasons"] = sorted({graph_break_cause(r) for r in breaks} | set(fallbacks))[:20]
        ctx.findings["compile_backend"] = backend
        ctx.findings["whole_graph"] = whole


def _numerics(ctx: StageContext, key: str, value: Any) -> None:
    """Record one numerics figure (the record's ``numerics`` field)."""
    if isinstance(value, Diff):
        value = value.to_dict()
    ctx.findings.setdefault("numerics", {})[key] = value


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
