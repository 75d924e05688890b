"""The stages of one model's check, each a small function over a shared ``StageContext``.

Stages raise on failure; ``check.check_model`` catches and classifies in one place. Each
stage leaves what the next one needs on the context (model, inputs, output) and what the
record needs (fallbacks, graph breaks, numerics) in ``ctx.findings``.
"""

from __future__ import annotations

import contextlib
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import torch

from sweeper.checks import backend_breaks, device_runs, generation, randomness, sampling, selfnoise, shapes
from sweeper.checks.classify import graph_break_cause
from sweeper.checks.gcpause import fewer_collections
from sweeper.checks.lognames import names_when_logged
from sweeper.checks.numerics import Diff, Tolerance, compare, compare_grads, format_error, has_nan, seeded, tolerance_for
from sweeper.checks.reference import Run, cpu_reference, cpu_rerun, first_float, precise_run, scalar_loss
from sweeper.checks.shape_inputs import moved
from sweeper.checks.training import mode_context
from sweeper.devices.base import Device
from sweeper.devices.precision import Float32Math
from sweeper.devices.tied_weights import broken_groups, swap_params_on_conversion, tied_groups
from sweeper.libraries import build as build_model
from sweeper.libraries.pristine import pristine
from sweeper.libraries.transformers import Built
from sweeper.records import NUMERICS_TENSORS, ModelRef, Reason, ReasonKind
from sweeper.settings.config import SweepConfig
from sweeper.settings.errors import NoGradientError, NonFiniteReferenceError, NumericsError, SweeperError

# A reference whose largest gradient is below this checks nothing: differences of a few
# float32 roundings of the values it is computed from are as large as the gradient itself.
ALIVE_GRADIENT = 1e-5


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
    # How the references ran (mode, loss, random draws), for the device run and wider runs
    # to copy: ``forward_how`` for the output, ``backward_how`` for the gradients (None: no
    # reference, the model steps in train mode or falls back to eval).
    forward_how: dict[str, Any] = field(default_factory=dict)
    backward_how: dict[str, Any] | None = None
    # CPU runs in a wider format or the device's declared math, made only when a gap past
    # the tolerance needs them ("float64_forward", "declared_backward", "float32_forward"...).
    wider: dict[str, Run] = field(default_factory=dict)
    findings: dict[str, Any] = field(default_factory=dict)
    # Blockers a stage found without raising them (it raised another, or went on to judge
    # more): the checker takes them with the stage's own (``checker._run_one``).
    found_blockers: list[Reason] = field(default_factory=list)
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
    # The shapes stage's inputs and their CPU outputs, made at load while the model is on
    # the CPU (None: not made, as in a control, which runs the shapes without them).
    shape_plan: shapes.ShapePlan | None = None
    # The compile stage's compiled model, whose graphs the shapes stage calls at new shapes.
    compiled: Any = None
    # The generate stage's prompt and the CPU's tokens, made at load while the model is on
    # the CPU (None: not made; a model that does not generate has no generate stage).
    generation_plan: generation.GenerationPlan | None = None
    # Why the CPU could not generate at load: the generate stage raises it (its CPU control
    # then says whose it is); the other stages run as before.
    generation_failed: Exception | None = None
    # A pipeline's images on the CPU from its sampling entry (``Built.sample``), made at load.
    sampling_plan: sampling.SamplingPlan | None = None
    # When the model's check began (``time.perf_counter``): a stage's own time limit ends
    # within the model's --timeout.
    started: float = field(default_factory=time.perf_counter)


def load(ctx: StageContext) -> None:
    """Build the model and inputs on the CPU; run the CPU reference for numerics. A model
    of several components takes no reference of its own: each component's check does."""
    if ctx.built is None:
        try:
            ctx.built = build_model(ctx.ref, ctx.cfg)
        except Exception as exc:
            # A quantized repo whose method could not be applied: the record still says which.
            if getattr(exc, "quantization", None):
                ctx.findings["quantization"] = exc.quantization  # type: ignore[attr-defined]
            raise
        if ctx.part is not None:  # a component's control: built afresh with its pipeline
            ctx.built = ctx.built.components[ctx.part]
    if ctx.built.components:
        if "generate" in (ctx.runs or frozenset(ctx.cfg.check.stages)):
            ctx.sampling_plan = sampling.sample_on_cpu(ctx.built, seed=ctx.cfg.materialise.seed)
        return
    # Whatever runs the forward compares it: by the stages that run, not only those named.
    wanted = ctx.reference_of or ctx.runs or frozenset(ctx.cfg.check.stages)
    if (ctx.device.torch_device != "cpu" or ctx.reference_of is not None) and wanted & {"forward", "backward"}:
        built, seed = ctx.built, ctx.cfg.materialise.seed
        # pristine: caches the CPU forward fills stay off the model the device runs.
        with pristine(built.model):
            run = cpu_reference(built.model, built.inputs, seed=seed, has_labels=built.has_labels,
                                grads="backward" in wanted, backward=False)
            ctx.reference, ctx.forward_how = run.output, {"mode": "eval", "draws": run.draws}
            if "backward" in wanted:
                _backward_reference(ctx)
        drawn = [d.describe() for d in run.draws + (ctx.backward_how or {}).get("draws", [])]
        if drawn:
            _numerics(ctx, "random_ops", _distinct(drawn))
    if "generate" in wanted and generation.generator_of(ctx.built.model) is not None:
        try:
            with pristine(ctx.built.model):
                ctx.generation_plan = generation.plan_on_cpu(ctx.built.model, ctx.built.inputs,
                                                             seed=ctx.cfg.materialise.seed)
        except Exception as exc:  # noqa: BLE001 - the generate stage's failure, not the load's
            ctx.generation_failed = exc
    if ctx.reference_of is None and "shapes" in wanted:
        with pristine(ctx.built.model):
            ctx.shape_plan = shapes.plan_on_cpu(ctx.built.model, ctx.built.inputs, config=ctx.built.config,
                                                seed=ctx.cfg.materialise.seed,
                                                again=shapes.follows_automatic_dynamic(ctx.device))


def _backward_reference(ctx: StageContext) -> None:
    """The CPU gradients the backward stage is judged by: a training step (train mode,
    dropout off; eval mode when the model cannot train on the CPU), with a loss whose
    gradients are alive. Gradients that all but vanish under every loss are not compared
    (``numerics.backward_not_compared`` says why)."""
    built, seed = _built(ctx), ctx.cfg.materialise.seed
    how: dict[str, Any] = {"mode": "train", "loss": "default"}
    try:
        run = cpu_reference(built.model, built.inputs, seed=seed, has_labels=built.has_labels, grads=True, mode="train")
    except Exception as exc:  # noqa: BLE001 - a model that cannot train is checked as it runs
        ctx.findings["backward_mode"] = f"eval (train mode failed on the CPU: {type(exc).__name__}: {str(exc)[:160]})"
        how["mode"] = "eval"
        run = cpu_reference(built.model, built.inputs, seed=seed, has_labels=built.has_labels, grads=True, mode="eval")
    largest = gradient_scale(run.grads)
    figures: dict[str, Any] = {"mode": how["mode"], "default_loss_max": largest, "loss": "default", "max": largest}
    if run.grads and largest < ALIVE_GRADIENT:
        other = cpu_reference(built.model, built.inputs, seed=seed, has_labels=built.has_labels, grads=True,
                              mode=how["mode"], loss="projection")
        if gradient_scale(other.grads) > largest:
            run, how["loss"] = other, "projection"
            figures.update(loss="projection", max=gradient_scale(other.grads))
    _numerics(ctx, "reference_gradients", figures)
    ctx.backward_how = {**how, "draws": run.draws}
    ctx.findings.setdefault("backward_mode", how["mode"])
    if run.grads and figures["max"] < ALIVE_GRADIENT:
        _numerics(ctx, "backward_not_compared", f"the CPU reference's gradients all but vanish (largest "
                  f"{figures['max']:.3g} < {ALIVE_GRADIENT:g} under every loss): a comparison would judge noise")
        return
    ctx.reference_grads = run.grads
    if run.note:
        _numerics(ctx, "backward_reference", run.note)


def gradient_scale(grads: dict[str, torch.Tensor] | None) -> float:
    """The largest magnitude of any gradient (0 for none)."""
    return max((float(g.detach().abs().max()) for g in (grads or {}).values() if g.numel()), default=0.0)


def _distinct(draws: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Each (op, module, stage) once, with how many times it drew."""
    counted: dict[tuple[str, str, str], int] = {}
    for d in draws:
        key = (d["op"], d["module"], d["stage"])
        counted[key] = counted.get(key, 0) + 1
    return [{"op": op, "module": module, "stage": stage, "calls": n} for (op, module, stage), n in counted.items()][:20]


def to_device(ctx: StageContext) -> None:
    """Move model and inputs; detect tied weights that the move untied."""
    built = _built(ctx)
    groups = tied_groups(built.model)
    with swap_params_on_conversion(ctx.cfg.device.retie_weights and bool(groups)):
        built.model.to(ctx.device.torch_device)
    ctx.inputs = {k: moved(v, ctx.device.torch_device) for k, v in built.inputs.items()}
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
    """Run the model on the device (eval mode, the CPU run's seed, the CPU run's random
    draws fed in); compare with the CPU."""
    built = _built(ctx)
    built.model.eval()
    with seeded(ctx.cfg.materialise.seed), randomness.replayed(ctx.forward_how.get("draws"), judge=True) as replay:
        ctx.output = built.model(**ctx.inputs)
    ctx.device.synchronize()
    if replay is not None and not _random_draws(ctx, "forward", replay):
        return
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
    _run_twice(ctx, "forward", {"output": got}, tol)
    if diff.within or (replay is None and _nondeterministic(ctx, tol)) or \
            _cleared(ctx, "forward", diff, tol, {"output": got}):
        return
    _over(ctx, "forward", diff)
    raise NumericsError(f"max |device - cpu| = {diff.max_abs:.3g} exceeds max({tol.atol:g}, {tol.rtol:g} x "
                        f"max|cpu|) (relative {diff.max_rel:.3g}) and the device is further from a "
                        f"{_yardstick(ctx)} run than its declared math ({ctx.device.float32_math().describe()}) allows")


def _random_draws(ctx: StageContext, stage: str, replay: randomness.Replay) -> bool:
    """Record how a run that drew random numbers was judged: each random op's device draw
    against the CPU's distribution, then the CPU's draws fed in. Raises ``NumericsError``
    naming a random op whose draws are not the CPU's distribution; False when the device
    drew otherwise than the CPU (other ops or shapes), so its result is not compared."""
    found = {"compared": "device run fed the CPU's random draws; each device draw tested against the CPU's "
                         "distribution (two-sample Kolmogorov-Smirnov)",
             "draws": replay.checks[:20], "unmatched": replay.unmatched[:20]}
    if not replay.complete:
        found["compared"] = "not compared: the device drew other random numbers than the CPU (ops or shapes)"
    ctx.findings.setdefault("numerics", {}).setdefault("random", {})[stage] = found
    wrong = replay.wrong()
    if wrong:
        first = wrong[0]
        raise NumericsError(f"{first['op']} in {first['module']}: the device's draws do not follow the CPU's "
                            f"distribution (Kolmogorov-Smirnov {first['ks']} > {first['bound']})", op=first["op"])
    return replay.complete


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




def _run_twice(ctx: StageContext, stage: str, got: dict[str, torch.Tensor], tol: Tolerance) -> None:
    """The device run a second time, same seed, inputs and draws (``device_runs``): its spread
    recorded and judged against the CPU's own; raises when the device's own spread is past
    the tolerance. A second run that fails leaves the verdict to the first."""
    built, seed = _built(ctx), ctx.cfg.materialise.seed
    try:
        if stage == "forward":
            again: Any = device_runs.output_again(built.model, ctx.inputs, seed=seed, draws=ctx.forward_how.get("draws"))
        else:
            again = device_runs.gradients_again(built.model, ctx.inputs, seed=seed, has_labels=built.has_labels,
                                                how=ctx.backward_how or {})
        ctx.device.synchronize()
        found = device_runs.spread(stage, got, again, tol)
    except Exception as exc:  # noqa: BLE001 - an inconclusive second run judges nothing
        ctx.findings.setdefault("numerics", {}).setdefault("device_runs", {})[stage] = {
            "failed": f"{type(exc).__name__}: {str(exc)[:200]}"}
        return

    def cpu_noise() -> Diff | None:
        if stage == "forward":
            return selfnoise.output_noise(built.model, built.inputs, ctx.reference, seed=seed, tol=tol,  # type: ignore[arg-type]
                                          draws=ctx.forward_how.get("draws"))
        return selfnoise.gradient_noise(built.model, built.inputs, ctx.reference_grads or {}, seed=seed,
                                        has_labels=built.has_labels, tol=tol, how=ctx.backward_how or {})

    device_runs.judge(ctx.findings.setdefault("numerics", {}), stage, found, tol, cpu_noise)


def _over(ctx: StageContext, stage: str, diff: Diff) -> None:
    """Record, as a field, which stage and tensor went past the tolerance."""
    _numerics(ctx, "over", {"stage": stage, "tensor": NUMERICS_TENSORS[stage], **diff.to_dict()})


def _cleared(ctx: StageContext, stage: str, diff: Diff, tol: Tolerance, got: dict[str, torch.Tensor]) -> bool:
    """Whether a gap past the tolerance is not the device's: within the CPU reference's own
    noise (a second CPU run, same seed), or no further from a wider-format CPU run (float64;
    float32 for a reduced-precision sweep) than the device's declared math allows. A
    numerics verdict needs that proof: when the wider run cannot be made, the stage passes
    with its figures and ``numerics.unproven`` says why."""
    if _noise(ctx, stage, diff, tol, got):
        return True
    proof = _rounding(ctx, stage, got, tol) if ctx.cfg.device.dtype == "float32" else _format_error(ctx, stage, got)
    if proof is None or "failed" in proof:
        why = (proof or {}).get("failed") or f"no {_yardstick(ctx)} run to measure the gap against"
        _numerics(ctx, "unproven", {"stage": stage, "why": why})
        return True
    found = dict(ctx.findings["numerics"].get("noise") or {})
    found["float64" if ctx.cfg.device.dtype == "float32" else "float32"] = proof
    if proof["within"]:
        within_exact = proof.get("within_exact", True)
        _numerics(ctx, "within_precision" if not within_exact else "within_noise", {**found, "within": True})
        ctx.findings["numerics"].pop("noise", None)
        return True
    _numerics(ctx, "noise", found)
    return False


def _yardstick(ctx: StageContext) -> str:
    return "float64" if ctx.cfg.device.dtype == "float32" else "float32"


def _noise(ctx: StageContext, stage: str, diff: Diff, tol: Tolerance, got: dict[str, torch.Tensor]) -> bool:
    """Whether a gap past the tolerance is within a second CPU run's distance from the
    reference (same seed, same draws: ``selfnoise``); recorded either way."""
    built = _built(ctx)
    seed = ctx.cfg.materialise.seed
    try:
        if stage == "forward":
            assert ctx.reference is not None
            noise = selfnoise.output_noise(built.model, built.inputs, ctx.reference, seed=seed, tol=tol,
                                           draws=ctx.forward_how.get("draws"))
        else:
            noise = selfnoise.gradient_noise(built.model, built.inputs, ctx.reference_grads or {}, seed=seed,
                                             has_labels=built.has_labels, tol=tol, how=ctx.backward_how or {})
    except Exception as exc:  # noqa: BLE001 - no second run: the wider-format proof decides
        _numerics(ctx, "noise", {"stage": stage, "failed": f"{type(exc).__name__}: {str(exc)[:200]}"})
        return False
    noise = device_runs.larger(noise, ctx.findings.get("numerics", {}), stage)  # the device's own spread, if larger
    found = selfnoise.finding(stage, NUMERICS_TENSORS[stage], diff, noise)
    _numerics(ctx, "within_noise" if found["within"] else "noise", found)
    return bool(found["within"])


def _how(ctx: StageContext, stage: str) -> dict[str, Any]:
    """How the reference of ``stage`` ran (mode, loss, draws), for runs that copy it."""
    how = ctx.forward_how if stage == "forward" else (ctx.backward_how or {})
    return {"mode": how.get("mode", "eval"), "loss": how.get("loss", "default"), "draws": how.get("draws") or None}


def _rounding(ctx: StageContext, stage: str, got: dict[str, torch.Tensor], tol: Tolerance) -> dict[str, Any] | None:
    """For a float32 sweep: the device's, the float32 CPU reference's and (for a device
    that declares a reduced float32 math) a CPU run in that math's distance from a float64
    CPU run, on the tensors past the tolerance (``selfnoise.rounding``); None when there is
    nothing to compare."""
    wide = _wider_run(ctx, stage, "float64", torch.float64)
    if isinstance(wide, str):
        return {"failed": wide, "within": False}
    math = ctx.device.float32_math()
    allowed = None
    if not math.exact:
        declared = _wider_run(ctx, stage, "declared", torch.float32, math=math)
        if isinstance(declared, str):
            return {"failed": declared, "within": False}
        allowed = _tensors(stage, declared)
    precise, ref = _tensors(stage, wide), _reference_tensors(ctx, stage)
    if any(v is None for v in (*precise.values(), *ref.values())) or not precise:
        return None
    over = ["output"] if stage == "forward" else selfnoise.over_tolerance(got, ref, tol)
    found = selfnoise.rounding(got, ref, precise, over, declared=allowed)
    found["math"] = math.describe()
    return found


def _format_error(ctx: StageContext, stage: str, got: dict[str, torch.Tensor]) -> dict[str, Any] | None:
    """For a reduced-precision sweep: whether the difference is the format's rounding
    (see ``numerics.FORMAT_MULTIPLIER``) against a float32 CPU run."""
    wide = _wider_run(ctx, stage, "float32", torch.float32)
    if isinstance(wide, str):
        return {"failed": wide, "within": False}
    precise, ref = _tensors(stage, wide), _reference_tensors(ctx, stage)
    if any(v is None for v in (*precise.values(), *ref.values())) or not precise:
        return None
    verdict = format_error(got, ref, precise)
    ctx.findings.setdefault("numerics", {}).setdefault("float32", {})[stage] = verdict
    return verdict


def _wider_run(ctx: StageContext, stage: str, name: str, dtype: torch.dtype,
               math: Float32Math | None = None) -> Run | str:
    """The CPU run of ``stage``'s reference in ``dtype`` (and ``math``), made once per
    check; what went wrong, as text, when it cannot be made (nothing is then proven)."""
    key = f"{name}_{stage}"
    if key not in ctx.wider:
        built, backward = _built(ctx), stage == "backward"
        try:
            ctx.wider[key] = precise_run(built.model, built.inputs, dtype=dtype, seed=ctx.cfg.materialise.seed,
                                         has_labels=built.has_labels, grads=backward, backward=backward, math=math,
                                         **_how(ctx, stage))
        except Exception as exc:  # noqa: BLE001 - no yardstick: not proven
            return f"{name} run: {type(exc).__name__}: {str(exc)[:200]}"
    return ctx.wider[key]


def _tensors(stage: str, run: Run) -> dict[str, torch.Tensor | None]:
    """What a run gives ``stage`` to compare: its output, or its gradients."""
    return {"output": run.output} if stage == "forward" else dict(run.grads or {})


def _reference_tensors(ctx: StageContext, stage: str) -> dict[str, torch.Tensor | None]:
    """The CPU reference's output, or its gradients."""
    return {"output": ctx.reference} if stage == "forward" else dict(ctx.reference_grads or {})


def backward(ctx: StageContext) -> None:
    """A training step on the device: forward in the mode the CPU reference trained in
    (train mode, dropout off: ``training``), the reference's loss and random draws, then
    backward; check that gradients reached the parameters and compare them with the CPU's."""
    built = _built(ctx)
    ctx.output = None  # the forward stage's graph is not what a training step backpropagates
    how = ctx.backward_how
    try:
        replay = _training_step(ctx, how or {"mode": "train"})
    except Exception:
        if how is not None:
            raise  # the CPU ran this very step: the failure is the device's run's
        # No reference (the device is the CPU, or a control): a model that cannot train
        # steps in eval mode, as its reference would.
        ctx.findings["backward_mode"] = "eval (train mode failed)"
        replay = _training_step(ctx, {"mode": "eval"})
    ctx.device.synchronize()
    params = [p for p in built.model.parameters() if p.requires_grad]
    with_grad = sum(1 for p in params if p.grad is not None)
    ctx.findings["params_with_grad"] = f"{with_grad}/{len(params)}"
    if params and with_grad == 0:
        raise NoGradientError("backward ran but no parameter received a gradient")
    if replay is not None and not _random_draws(ctx, "backward", replay):
        return
    _judge_gradients(ctx)


def _training_step(ctx: StageContext, how: dict[str, Any]) -> randomness.Replay | None:
    """Forward, loss and backward on the device as ``how`` says (mode, loss, draws)."""
    model = _built(ctx).model
    model.zero_grad(set_to_none=True)
    ctx.findings.setdefault("backward_mode", how.get("mode", "train"))
    with mode_context(how.get("mode", "train"), model), seeded(ctx.cfg.materialise.seed), \
            randomness.replayed(how.get("draws"), judge=True) as replay:
        output = model(**ctx.inputs)
        scalar_loss(output, has_labels=_built(ctx).has_labels, kind=how.get("loss", "default")).backward()
    return replay


def _judge_gradients(ctx: StageContext) -> None:
    """Compare parameter gradients with the CPU run's (same model, inputs, seed, mode, loss)."""
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
    _run_twice(ctx, "backward", got, tol)
    if diff.within or "nondeterministic" in ctx.findings.get("numerics", {}) or \
            _cleared(ctx, "backward", diff, tol, got):
        return
    _over(ctx, "backward", diff)
    raise NumericsError(f"gradients: max |device - cpu| = {diff.max_abs:.3g} (relative {diff.max_rel:.3g}, "
                        f"worst {diff.where}) exceeds max({tol.atol:g} x max|cpu grad|, {tol.rtol:g} x the "
                        f"parameter's max|cpu grad|) and the device is further from a {_yardstick(ctx)} run "
                        f"than its declared math ({ctx.device.float32_math().describe()}) allows")


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
    ctx.compiled = compiled
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


def generates(ctx: StageContext) -> bool:
    """Whether the model built for ``ctx`` generates (and so has a generate stage): a
    model that can ``generate``, or a pipeline with a sampling entry."""
    if ctx.built is None:
        return False
    if ctx.built.components:
        return ctx.built.sample is not None
    return generation.generator_of(ctx.built.model) is not None


def generate_stage(ctx: StageContext) -> None:
    """The model generating as its users run it, eager and compiled with a static cache,
    its tokens judged against the CPU's (``checks.generation``)."""
    built = _built(ctx)
    if built.components:  # a pipeline: its sampling entry
        sampled = ctx.sampling_plan or (sampling.sample_on_cpu(built, seed=ctx.cfg.materialise.seed)
                                        if ctx.device.torch_device == "cpu" else None)
        if sampled is None:
            raise RuntimeError("the generate stage ran without the CPU's images to judge it by")
        sampling.run_sampling(ctx, sampled)
        return
    if ctx.generation_failed is not None:
        raise ctx.generation_failed
    plan = ctx.generation_plan
    if plan is None and ctx.device.torch_device == "cpu":  # a CPU control: the reference is this very device
        plan = generation.plan_on_cpu(built.model, built.inputs, seed=ctx.cfg.materialise.seed)
    if plan is None:
        raise RuntimeError("the generate stage ran without the CPU's tokens to judge it by")
    generation.run(ctx, plan)


def shapes_stage(ctx: StageContext) -> None:
    """The model's inference compiled at other input shapes on the device: recompiles,
    symbolic shapes, padding to buckets (``checks.shapes``)."""
    _built(ctx)
    shapes.run_stage(ctx, ctx.shape_plan)


def _numerics(ctx: StageContext, key: str, value: Any) -> None:
    """Record one numerics figure (the record's ``numerics`` field)."""
    if isinstance(value, Diff):
        value = value.to_dict()
    ctx.findings.setdefault("numerics", {})[key] = value


def _built(ctx: StageContext) -> Built:
    if ctx.built is None:
        raise RuntimeError("stage ran before load")
    return ctx.built
