"""The shapes stage: what lengths that vary cost on the device.

Users feed a model many lengths. On a device whose compiler takes static shapes only,
each new shape is another compile (minutes each on real hardware), or the input is padded
to fixed buckets and the model must still give the same answer. The stage runs the
model's inference, compiled with the device's backend, at the compile stage's shape, a
longer sequence and one more row (``shape_inputs``) and records:

- the graphs compiled at each shape and Dynamo's reason for each recompile (the guard that
  failed: which input, which dimension), the seconds per shape and the outputs against the
  CPU's at each new shape (the compile stage compared its own). The compile stage's
  compiled model is called again, as it ran (its inputs, grad enabled), so its graphs
  serve the first shape and each new shape is a recompile of what a user compiled;
- whether one symbolic-shape graph serves every later shape. On a device that does not
  declare static shapes only, the question is asked as a user's ``torch.compile`` asks it
  (Dynamo's automatic dynamic shapes): the second size of a dimension recompiles with that
  dimension symbolic, and a third size (``shape_inputs.AGAIN``) must reuse that graph. That
  costs what the user pays (one recompile per dimension), where a separate ``dynamic=True``
  compile of every dimension costs a whole compile more. Only where automatic dynamic
  shapes are off and the device does not declare static shapes is ``dynamic=True`` tried;
- the verdict: ``symbolic`` (one graph serves every later length), ``static`` (a workload
  of ``WORKLOAD_LENGTHS`` lengths costs that many compiles per graph), or the stage fails
  at the shape where an op or guard breaks (classified and controlled like any stage's
  failure); a stage out of its own time (``--shapes-timeout``) is ``timeout``;
- padding to buckets, for models with an attention mask: the real positions' outputs of
  the right-padded input against the unpadded run's, on the device (eager, as the padded
  input is what the device then runs). A difference is the device's only when the CPU's
  own padded run (a CPU copy of the model, made only then) agrees with its unpadded one;
  otherwise the model's masking does it, and the record says so without failing the
  model on the device's account.
"""

from __future__ import annotations

import contextlib
import re
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import torch

from sweeper.checks.gcpause import fewer_collections
from sweeper.checks.lognames import names_when_logged
from sweeper.checks.numerics import compare, cpu_twin, seeded, tolerance_for
from sweeper.checks.shape_inputs import AGAIN, PaddingPair, ShapeRun, moved, padding_pair, shape_runs
from sweeper.settings.errors import NumericsError

# The distinct lengths of the workload whose compiles the record states.
WORKLOAD_LENGTHS = 8
_SIZE_GUARD = re.compile(r"tensor '(.+?)' size mismatch at index (\d+)\. expected (\d+), actual (\d+)")
_INPUT_NAME = re.compile(r"\[['\"]([^'\"]+)['\"]\]$")


@dataclass
class ShapePlan:
    """What the stage runs, made on the CPU before the model moves: the shapes, the CPU
    outputs (name, tensor) of the shapes past the compile stage's, the padding pair, and
    the shapes left out because the CPU cannot run them either (with why)."""

    runs: list[ShapeRun]
    references: dict[str, tuple[str, torch.Tensor] | None] = field(default_factory=dict)
    pair: PaddingPair | None = None
    left_out: dict[str, str] = field(default_factory=dict)


def follows_automatic_dynamic(device: Any) -> bool:
    """Whether the stage asks Dynamo's automatic dynamic shapes (a third size of the first
    dimension that grows): on when Dynamo has it on and the device does not declare static
    shapes only (such a device turns it off: each new shape compiles anew)."""
    from torch._dynamo import config

    return device.accepts_symbolic_shapes() is not False and bool(getattr(config, "automatic_dynamic_shapes", False))


def plan_on_cpu(model: torch.nn.Module, inputs: dict[str, Any], *, config: Any, seed: int,
                with_references: bool = True, again: bool = False) -> ShapePlan:
    """The shapes to run (``again``: with a third size, ``shape_inputs.shape_runs``) and,
    with ``with_references``, the CPU outputs of those past the compile stage's (the model
    still on the CPU). A shape the CPU cannot run is left out,
    so a shape the device fails at is one the model runs. The compile stage's shape takes
    no run of its own (the compile stage compared it with the CPU, and the load stage ran
    the model at it), nor does the padding pair: its CPU run is made only when the device's
    pair differs (``_padding``), which few do."""
    runs = shape_runs(inputs, config, again=again)
    pair = padding_pair(inputs, pad_token_id=_pad_token(config))
    if not with_references:
        return ShapePlan(runs, pair=pair)
    plan = ShapePlan([], pair=pair)
    for run in runs:
        if run.label == "compile":
            plan.runs.append(run)
            continue
        try:
            plan.references[run.label] = _eager(model, run.inputs, seed=seed)
        except Exception as exc:  # noqa: BLE001 - the CPU's own failure: not a shape to put to the device
            plan.left_out[run.label] = _why(exc)
            continue
        plan.runs.append(run)
    return plan


def run_stage(ctx: Any, plan: ShapePlan | None) -> None:
    """The shapes stage on ``ctx`` (a ``stages.StageContext`` past the compile stage):
    findings in ``ctx.findings["shapes"]``; raises what breaks the model at a shape, or a
    ``NumericsError`` for padding that changes the real positions on the device alone."""
    built = ctx.built
    seed = ctx.cfg.materialise.seed
    if plan is None:  # a CPU control: the shapes without references
        plan = plan_on_cpu(built.model, built.inputs, config=built.config, seed=seed, with_references=False,
                           again=follows_automatic_dynamic(ctx.device))
    found: dict[str, Any] = {"workload_lengths": WORKLOAD_LENGTHS}
    if plan.left_out:
        found["left_out"] = dict(plan.left_out)
    ctx.findings["shapes"] = found
    if not plan.runs:
        found["verdict"] = "not_run"
        return
    built.model.eval()
    backend = ctx.cfg.device.compile_backend or ctx.device.compile_backend
    found["recompile_limit"] = _recompile_limit()
    compiled = ctx.compiled if ctx.compiled is not None and plan.runs[0].label == "compile" else None
    try:
        found["shapes"] = _compiled_runs(ctx, plan, compiled=compiled, backend=backend, failed=found)
    except Exception:
        found["verdict"] = "fails"
        raise
    if compiled is not None:
        found["first_shape"] = "compiled by the compile stage (grad enabled, as it ran)"
    found["compiles"] = sum(s["graphs"] for s in found["shapes"])
    found["recompiles"] = sum(len(s.get("recompiles", ())) for s in found["shapes"])
    per_shape = max((s["graphs"] for s in found["shapes"]), default=0) or 1
    again = next((s for s in found["shapes"] if s["shape"] == AGAIN), None)
    if again is not None:
        found["symbolic"] = _automatic(found["shapes"], again)
        if found["symbolic"]["status"] == "reused":
            # What a workload of any number of lengths costs: the first compile, and the one
            # recompile that made the dimension symbolic.
            found["verdict"], found["workload_compiles"] = "symbolic", 2 * per_shape
        else:
            found["verdict"], found["workload_compiles"] = "static", per_shape * WORKLOAD_LENGTHS
    else:
        found["symbolic"] = _symbolic(ctx, plan, backend)
        if found["symbolic"]["status"] == "accepted" and found["symbolic"]["graphs_after_first"] == 0:
            found["verdict"], found["workload_compiles"] = "symbolic", found["symbolic"]["graphs"]
        else:
            found["verdict"], found["workload_compiles"] = "static", per_shape * WORKLOAD_LENGTHS
    found["padding"] = _padding(ctx, plan)


def _compiled_runs(ctx: Any, plan: ShapePlan, *, compiled: Any = None, backend: Any = None,
                   dynamic: bool | None = None, failed: dict[str, Any] | None = None) -> list[dict[str, Any]]:
    """Call the model compiled at each shape in turn: per shape, the graphs compiled,
    Dynamo's reasons, the seconds and the output against the CPU's. ``compiled``: the
    compile stage's model, whose graphs for the first shape are already compiled (called as
    it was, grad enabled, so its guards hold and the first shape costs no compile); else
    the model is compiled afresh with ``backend`` and ``dynamic`` and run without grad.
    A failure names its shape in ``failed["failed_at"]`` and propagates."""
    import torch._dynamo
    from torch._dynamo.utils import counters

    reuse = compiled is not None
    if not reuse:
        torch._dynamo.reset()
        compiled = torch.compile(ctx.built.model, backend=backend, dynamic=dynamic)
    reasons: list[list[str]] = []
    tol = tolerance_for(ctx.cfg.device.dtype, atol=ctx.cfg.check.atol)
    out: list[dict[str, Any]] = []
    seed = ctx.cfg.materialise.seed
    grad = torch.enable_grad() if reuse else torch.no_grad()
    with _recompile_reasons(reasons), fewer_collections(), names_when_logged(), grad, ctx.device.new_shapes():
        for run in plan.runs:
            # Dynamo counts a graph once its backend compiled it (not a trace it restarted).
            before, heard = counters["stats"]["unique_graphs"], len(reasons)
            started = time.perf_counter()
            try:
                with seeded(seed):
                    output = compiled(**moved(run.inputs, ctx.device.torch_device))
                ctx.device.synchronize()
            except Exception:
                if failed is not None:
                    failed["failed_at"] = {"shape": run.label, "sizes": run.sizes}
                    failed["shapes"] = out
                raise
            entry: dict[str, Any] = {"shape": run.label, "sizes": run.sizes,
                                     "graphs": counters["stats"]["unique_graphs"] - before,
                                     "seconds": round(time.perf_counter() - started, 4)}
            if len(reasons) > heard:
                entry["recompiles"] = [_reason(r) for r in reasons[heard:] if r][:4]
            entry.update(_against_cpu(output, plan.references.get(run.label), tol))
            out.append(entry)
            del output
    return out


def _automatic(runs: list[dict[str, Any]], again: dict[str, Any]) -> dict[str, Any]:
    """What Dynamo's automatic dynamic shapes made of the shapes: whether the third size
    (``again``) reused the graph the second size recompiled symbolic (``reused``) or
    compiled once more (``recompiled``)."""
    before = runs[runs.index(again) - 1]
    return {"status": "reused" if again["graphs"] == 0 else "recompiled",
            "how": "torch.compile's automatic dynamic shapes: the second size recompiles with the dimension "
                   "symbolic, a third reuses that graph",
            "second": before["shape"], "graphs_at_second": before["graphs"], "graphs_at_third": again["graphs"]}


def _symbolic(ctx: Any, plan: ShapePlan, backend: Any) -> dict[str, Any]:
    """Whether one symbolic-shape graph serves every shape: as the device declares it, or
    compiled with ``dynamic=True`` and called at each shape."""
    from sweeper.checks.classify import classify

    if ctx.device.accepts_symbolic_shapes() is False:
        return {"status": "declared_static", "why": "the device declares static shapes only"}
    try:
        runs = _compiled_runs(ctx, plan, backend=backend, dynamic=True)
    except Exception as exc:  # noqa: BLE001 - a refusal is this finding, not the model's failure
        reason = classify(exc)
        return {"status": "refused", "kind": reason.kind.value, "op": reason.op, "message": reason.message[:300]}
    finally:
        import torch._dynamo

        torch._dynamo.reset()
    return {"status": "accepted", "graphs": sum(r["graphs"] for r in runs),
            "graphs_after_first": sum(r["graphs"] for r in runs[1:]),
            "seconds": round(sum(r["seconds"] for r in runs), 4)}


def _padding(ctx: Any, plan: ShapePlan) -> dict[str, Any]:
    """Right-padding to the bucket against the unpadded run, on the device; the CPU's own
    pair decides whose a difference is."""
    pair = plan.pair
    if pair is None:
        return {"status": "not_checked", "why": plan.left_out.get("padding") or "no attention mask over the length"}
    seed = ctx.cfg.materialise.seed
    dev = ctx.device.torch_device

    try:
        unpadded = _eager(ctx.built.model, moved(pair.unpadded, dev), seed=seed)
        padded = _eager(ctx.built.model, moved(pair.padded, dev), seed=seed)
    except Exception:
        why = _cpu_cannot_pad(ctx, pair, seed)
        if why is None:
            raise  # the CPU runs the pair: the device's failure
        return {"status": "not_checked", "why": why}
    found: dict[str, Any] = {"bucket": pair.bucket, "real": pair.real}
    gap = _real_gap(unpadded, padded, pair, ctx)
    if gap is None:
        return {**found, "status": "not_checked", "why": "the output has no position axis to compare"}
    found.update(output=gap[0], max_abs=gap[1].max_abs, max_rel=gap[1].max_rel)
    if gap[1].within:
        return {**found, "status": "pass"}
    # Whose the difference is: the same pair on a CPU copy of the model as it stands now.
    try:
        twin = cpu_twin(ctx.built.model)
        cpu = _real_gap(_eager(twin, pair.unpadded, seed=seed), _eager(twin, pair.padded, seed=seed), pair, ctx)
    except Exception as exc:  # noqa: BLE001 - no CPU run, no origin
        return {**found, "status": "fail", "origin": None, "why": f"no CPU run to tell whose the difference is ({_why(exc)})"}
    if cpu is not None and not cpu[1].within:
        return {**found, "status": "fail", "origin": "model", "cpu_max_abs": cpu[1].max_abs,
                "why": "the CPU's padded run differs from its unpadded one too: the model's masking"}
    found.update(status="fail", origin="device", cpu_max_abs=cpu[1].max_abs if cpu else None)
    ctx.findings["shapes"]["padding"] = found
    raise NumericsError(f"padding to a bucket of {pair.bucket} changes the {gap[0]} of the {pair.real} real positions "
                        f"on the device (max |padded - unpadded| = {gap[1].max_abs:.3g}); the CPU's padded run "
                        "agrees with its unpadded one")


def _cpu_cannot_pad(ctx: Any, pair: PaddingPair, seed: int) -> str | None:
    """Why a CPU copy of the model cannot run the padding pair either, or None when it can."""
    try:
        twin = cpu_twin(ctx.built.model)
        _eager(twin, pair.unpadded, seed=seed)
        _eager(twin, pair.padded, seed=seed)
    except Exception as exc:  # noqa: BLE001 - the model's own failure: padding is not checked
        return _why(exc)
    return None


def _real_gap(unpadded: tuple[str, torch.Tensor] | None, padded: tuple[str, torch.Tensor] | None,
              pair: PaddingPair, ctx: Any) -> tuple[str, Any] | None:
    """The padded output's real positions against the unpadded output: (output name, Diff)."""
    if unpadded is None or padded is None:
        return None
    name, short = unpadded
    _, long = padded
    if long.shape == short.shape:
        cut = long
    elif long.ndim >= 2 and long.shape[1] == pair.bucket and short.ndim >= 2 and short.shape[1] == pair.real \
            and long.shape[0] == short.shape[0] and long.shape[2:] == short.shape[2:]:
        cut = long[:, :pair.real]
    else:
        return None
    return name, compare(cut, short, tolerance_for(ctx.cfg.device.dtype, atol=ctx.cfg.check.atol))


def _against_cpu(output: Any, reference: tuple[str, torch.Tensor] | None, tol: Any) -> dict[str, Any]:
    """The output's distance from the CPU's at the same shape (recorded, not judged: the
    forward stage judged the device's numerics with its proofs)."""
    got = _named_first_float(output)
    if reference is None or got is None or got[1].shape != reference[1].shape:
        return {}
    diff = compare(got[1], reference[1], tol)
    return {"max_abs": diff.max_abs, "within": diff.within}


def _eager(model: torch.nn.Module, inputs: dict[str, Any], *, seed: int) -> tuple[str, torch.Tensor] | None:
    """The model's first float output (named) in eval mode, no grad, seeded."""
    was_training = model.training
    model.eval()
    try:
        with torch.no_grad(), seeded(seed):
            found = _named_first_float(model(**inputs))
    finally:
        model.train(was_training)
    return None if found is None else (found[0], found[1].detach().clone())


def _named_first_float(output: Any) -> tuple[str, torch.Tensor] | None:
    """The first floating tensor of an output with the name it has there, past the loss
    when there is another (the logits say more than the loss computed from them)."""
    if isinstance(output, torch.Tensor):
        return ("output", output) if output.is_floating_point() else None
    items = output.items() if isinstance(output, dict) or hasattr(output, "items") else \
        ((f"output[{i}]", v) for i, v in enumerate(output)) if isinstance(output, (list, tuple)) else ()
    floats = [(str(n), v) for n, v in items if isinstance(v, torch.Tensor) and v.is_floating_point()]
    return next((f for f in floats if f[0] != "loss"), floats[0] if floats else None)


def _reason(failures: list[str]) -> dict[str, Any]:
    """One recompile: the guard that failed on the latest graph (Dynamo's text, its first
    line) and, for a size guard, the input and dimension; how many graphs' guards failed."""
    text = failures[0].strip()
    found: dict[str, Any] = {"guard": text.splitlines()[0][:300] if text else ""}
    match = _SIZE_GUARD.search(text)
    if match:
        name = _INPUT_NAME.search(match.group(1))
        found.update(input=name.group(1) if name else match.group(1), dim=int(match.group(2)),
                     expected=int(match.group(3)), actual=int(match.group(4)))
    if len(failures) > 1:
        found["graphs_failed"] = len(failures)
    return found


@contextlib.contextmanager
def _recompile_reasons(into: list[list[str]]) -> Iterator[None]:
    """Collect Dynamo's recompile reasons (the guards that failed) while the block runs:
    Dynamo computes them at each recompile and logs them only when asked to."""
    try:
        from torch._dynamo import convert_frame
    except ImportError:
        yield
        return
    original = getattr(convert_frame, "get_and_maybe_log_recompilation_reasons", None)
    if original is None:
        yield
        return

    def heard(*args: Any, **kwargs: Any) -> Any:
        reasons = original(*args, **kwargs)
        into.append([str(r) for r in reasons or ()])
        return reasons

    convert_frame.get_and_maybe_log_recompilation_reasons = heard
    try:
        yield
    finally:
        convert_frame.get_and_maybe_log_recompilation_reasons = original


def _recompile_limit() -> int | None:
    """Dynamo's compiles per frame before it runs the frame eagerly instead."""
    from torch._dynamo import config

    limit = getattr(config, "recompile_limit", None) or getattr(config, "cache_size_limit", None)
    return int(limit) if isinstance(limit, int) else None


def _pad_token(config: Any) -> int | None:
    token = getattr(config, "pad_token_id", None)
    if token is None:
        token = getattr(getattr(config, "text_config", None), "pad_token_id", None)
    return token if isinstance(token, int) else None


def _why(exc: Exception) -> str:
    return f"{type(exc).__name__}: {str(exc).strip()[:160]}"
