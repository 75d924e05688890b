"""check_model: run one model's stages on one device and return its record; never raises.

Each stage's exception is caught here, in one place, and classified once. A stage after a
failed one is ``blocked`` — except after a *soft* failure (the model is wrong but still
runs, e.g. untied weights) or with ``--collect-all``, where later stages still run when
what they need exists, so one run finds every blocker of the model.
"""

from __future__ import annotations

import contextlib
import copy
import dataclasses
import time
from collections.abc import Callable, Collection
from typing import Any

from sweeper.checks import compile_time, components, control, deadline, origins, part_memo, stages
from sweeper.checks.classify import classify
from sweeper.checks.repro import repro_command
from sweeper.checks.versions import library_versions, versions
from sweeper.devices.base import Device, Recording
from sweeper.devices.spec import DeviceSpec
from sweeper.libraries import dynamo_settings
from sweeper.libraries.built import Built
from sweeper.libraries.registry import library_name_of
from sweeper.records import (
    ModelRecord,
    ModelRef,
    Reason,
    ReasonKind,
    Stage,
    StageResult,
    Status,
    base_record,
    kind_info,
)
from sweeper.settings.config import SweepConfig

STAGE_FUNCS: dict[Stage, Callable[[stages.StageContext], None]] = {
    Stage.LOAD: stages.load,
    Stage.TO_DEVICE: stages.to_device,
    Stage.FORWARD: stages.forward,
    Stage.BACKWARD: stages.backward,
    Stage.COMPILE: stages.compile_stage,
    Stage.GENERATE: stages.generate_stage,
    Stage.SHAPES: stages.shapes_stage,
}
# What each stage needs to have passed (load is implied by the selection).
NEEDS: dict[Stage, tuple[Stage, ...]] = {
    Stage.LOAD: (),
    Stage.TO_DEVICE: (Stage.LOAD,),
    Stage.FORWARD: (Stage.LOAD, Stage.TO_DEVICE),
    Stage.BACKWARD: (Stage.LOAD, Stage.TO_DEVICE, Stage.FORWARD),
    Stage.COMPILE: (Stage.LOAD, Stage.TO_DEVICE),
    # Generating is forward after forward: a forward that fails would fail it again.
    Stage.GENERATE: (Stage.LOAD, Stage.TO_DEVICE, Stage.FORWARD),
    # Other shapes after one compiled: a graph the device refuses at the first shape would
    # only be refused again.
    Stage.SHAPES: (Stage.LOAD, Stage.TO_DEVICE, Stage.COMPILE),
}
# Stages no other stage needs: a failure there blocks nothing after it (the shapes stage
# runs after generate, but on the compile stage's graphs).
LEAVES = frozenset({Stage.GENERATE})
# Stages with a time limit of their own (the setting that holds it): out of time, such a
# stage is a timeout of that stage alone, and what the model earned before stands.
OWN_LIMIT: dict[Stage, str] = {Stage.SHAPES: "shapes_timeout"}

class Checker:
    """``check_model`` for one sweep, with its device set up once per process.

    Made in planning from the settings and the ``DeviceSpec`` and shipped to each worker
    as is (it pickles without its device); the worker calls ``setup()`` once, then
    ``check(ref)`` per model and ``between_models()`` after each.
    """

    def __init__(self, cfg: SweepConfig, spec: DeviceSpec, *, on_stage: Callable[[str], None] | None = None,
                 on_earned: Callable[[ModelRecord], None] | None = None) -> None:
        # on_stage: told each stage's name as it starts; on_earned: handed what a model has
        # earned before a stage with a limit of its own. Module-level functions, so the
        # checker pickles: a worker's breadcrumbs.mark and breadcrumbs.earned.
        self.cfg, self.spec, self.on_stage, self.on_earned = cfg, spec, on_stage, on_earned
        self.device: Device | None = None
        self._failed: Exception | None = None
        # Components checked by this checker, answered again for later pipelines.
        self.parts = part_memo.PartMemo()

    def __getstate__(self) -> dict:
        return {"cfg": self.cfg, "spec": self.spec, "on_stage": self.on_stage, "on_earned": self.on_earned}

    def __setstate__(self, state: dict) -> None:
        self.__init__(state["cfg"], state["spec"], on_stage=state["on_stage"],  # type: ignore[misc]
                      on_earned=state.get("on_earned"))

    def setup(self) -> Checker:
        """Build and set the device up (once; a failure is reported by each ``check``)."""
        if self.device is None and self._failed is None:
            try:
                device = self.spec.build()
                device.setup()
                self.device = device
            except Exception as exc:  # noqa: BLE001 - each model's record says the device did not start
                self._failed = exc
        return self

    @classmethod
    def for_settings(cls, cfg: SweepConfig, *, on_stage: Callable[[str], None] | None = None) -> Checker:
        """A checker for ``cfg`` alone (``sweep one``, tests): resolves the device here."""
        from sweeper.devices.spec import resolve_device

        spec, _ = resolve_device(cfg, out_dir=str(cfg.out_dir))
        return cls(cfg, spec, on_stage=on_stage)

    def check(self, ref: ModelRef) -> ModelRecord:
        """The record of ``ref`` on this checker's device (never raises)."""
        self.setup()
        return _check(ref, self.cfg, self.device, failed=self._failed, on_stage=self.on_stage, parts=self.parts,
                      on_earned=self.on_earned)

    def control(self, ref: ModelRef, stage: str) -> dict[str, Any]:
        """The CPU control of a stage whose worker crashed, hung or ran out of memory: the
        model built afresh and run up to ``stage`` on the CPU (called in a fresh worker,
        under the same time and memory limits). What happened, as the record keeps it.

        Like for like: the device run's worker held the CPU reference (output and gradients,
        for numerics) through its device stages, so the control computes and holds the same
        reference. Without it the control would fit in less memory than the device run by
        the reference's size, and a host-side overrun would pass for the device's."""
        from sweeper.devices.base import get_device

        cfg = self.cfg.replace(device="cpu", compile_backend=control.CONTROL_BACKEND, stages=(stage,))
        held = frozenset(s.value for s in selected_stages(self.cfg.check.stages))
        record = _check(ref, cfg, get_device("cpu"), failed=None, on_stage=self.on_stage, reference_of=held)
        return control.verdict_of(record, stage)

    def between_models(self) -> None:
        """Clear what one model may leave in the device (caches, counters)."""
        if self.device is not None:
            with contextlib.suppress(Exception):
                self.device.reset_between_models()


def check_model(ref: ModelRef, cfg: SweepConfig, *, on_stage: Callable[[str], None] | None = None) -> ModelRecord:
    """``ref``'s record on ``cfg``'s device, built in this process; never raises.
    ``on_stage`` is told each stage's name as it starts."""
    try:
        checker = Checker.for_settings(cfg, on_stage=on_stage)
    except Exception as exc:  # noqa: BLE001 - a device that cannot be made is the record's error
        return _check(ref, cfg, None, failed=exc, on_stage=on_stage)
    return checker.check(ref)


def _present(found: dict[str, str]) -> dict[str, str]:
    """``found`` without the packages that are not installed."""
    return {name: version for name, version in found.items() if version != "absent"}


def _check(
    ref: ModelRef, cfg: SweepConfig, device: Device | None, *, failed: Exception | None,
    on_stage: Callable[[str], None] | None = None, reference_of: frozenset[str] | None = None,
    parts: part_memo.PartMemo | None = None, on_earned: Callable[[ModelRecord], None] | None = None,
) -> ModelRecord:
    """Run the selected stages for ``ref`` on ``device``; ``failed``: the device could not
    be set up, and the record says why. ``on_stage`` is told each stage's name as it starts,
    ``on_earned`` what the model earned before a stage with a limit of its own;
    ``reference_of``: hold the CPU reference of these stages even on the CPU (a control);
    ``parts``: components checked before, answered again."""
    started = time.perf_counter()
    record = base_record(ref, sweep_id="", device=cfg.device.spec, status=Status.PASS, weights=cfg.materialise.weights, dtype=cfg.device.dtype)
    record.library_name = library_name_of(ref)  # a row a library claimed from its id counts as that library's
    record.repro = repro_command(ref, cfg)
    try:
        if failed is not None or device is None:
            raise failed or RuntimeError("no device")
        dynamo_settings.restore()  # not what an earlier model's library import set
        # The versions that decide this model's verdict: torch, the device's profile and
        # tools, and the packages its library builds it with (timm, diffusers, ...).
        record.versions = {**versions(device), **_present(library_versions(record.library_name))}
        record.precision = device.float32_math().to_dict()
        _run_stages(ref, cfg, device, record, on_stage=on_stage, reference_of=reference_of, parts=parts,
                    started=started, on_earned=on_earned)
    except Exception as exc:  # set-up outside any stage: still one record
        reason = classify(exc)
        record.status, record.reason, record.blockers = Status.ERROR, reason, [reason]
        record.settle()
    record.seconds = time.perf_counter() - started
    return record


def selected_stages(names: Collection[str]) -> list[Stage]:
    """The stages named, with the ones they need, in pipeline order (``--stages forward``
    runs load and to_device first: a forward on the device needs the model there)."""
    wanted = {Stage.LOAD} | {s for s in Stage if s.value in names}
    for stage in list(wanted):
        wanted.update(NEEDS[stage])
    return [s for s in Stage if s in wanted]


def _run_stages(
    ref: ModelRef, cfg: SweepConfig, device: Device, record: ModelRecord, *,
    on_stage: Callable[[str], None] | None = None, reference_of: frozenset[str] | None = None,
    parts: part_memo.PartMemo | None = None, started: float | None = None,
    on_earned: Callable[[ModelRecord], None] | None = None,
) -> None:
    selected = selected_stages(cfg.check.stages)
    runs = frozenset(s.value for s in selected)
    ctx = stages.StageContext(ref=ref, cfg=cfg, device=device, runs=runs, on_stage=on_stage, reference_of=reference_of)
    if started is not None:
        ctx.started = started
    device.reset_peak_memory()
    _run_loop(selected, ctx, device, record, on_earned=on_earned)
    _attribute(record, ctx, device)
    _finish(record, ctx, device)
    if ctx.built is not None and ctx.built.components:
        # A model of several (a diffusers pipeline): load built them all; each component
        # runs every selected stage on its own, and the record is their sum.
        reused: dict[str, str] = {}
        memo = parts if parts is not None else part_memo.PartMemo()
        checked = {name: _check_part(name, part, selected, ctx, device, memo, reused)
                   for name, part in ctx.built.components.items()}
        components.merge(record, checked, classes={n: p.architecture for n, p in ctx.built.components.items()})
        if reused:
            record.notes["components_reused_from"] = reused
        if Stage.GENERATE in selected and stages.generates(ctx):
            _generate_pipeline(record, ctx, device)


def _generate_pipeline(record: ModelRecord, ctx: stages.StageContext, device: Device) -> None:
    """The generate stage of a model of several components (a pipeline sampling), run
    once every component has run its own stages; blocked when a component's forward
    failed (under ``--collect-all``, when one could not run to its end)."""
    forward = record.stages.get(Stage.FORWARD.value)
    if forward is None or forward.status is not Status.PASS:
        if not (ctx.cfg.device.collect_all and forward is not None and forward.status is Status.FAIL):
            record.stages[Stage.GENERATE.value] = StageResult(Status.BLOCKED)
            return
    result, found, _ = _run_one(Stage.GENERATE, ctx, device, record)
    record.stages[Stage.GENERATE.value] = result
    record.stages = {s.value: record.stages[s.value] for s in Stage if s.value in record.stages}  # pipeline order
    record.blockers.extend(r for r in found if r not in record.blockers)
    record.generation = dict(ctx.findings.get("generation") or {})
    record.reason = record.blockers[0] if record.blockers else None
    record.status = _model_status(record.reason)
    record.settle()


def _check_part(name: str, part: Built, selected: list[Stage], ctx: stages.StageContext, device: Device,
                parts: part_memo.PartMemo, reused: dict[str, str]) -> ModelRecord:
    """One component's own record: its CPU reference (its load), then the other stages; a
    copy of the record of the same component checked before in this worker (``part_memo``),
    whose model ``reused`` then names."""
    key = part_memo.part_key(part, ctx.cfg, control=ctx.reference_of is not None)
    known = parts.recall(key)
    if known is not None:
        reused[name], sub = known
        return sub
    sub = base_record(ctx.ref, sweep_id="", device=ctx.cfg.device.spec, status=Status.PASS,
                      weights=ctx.cfg.materialise.weights, dtype=ctx.cfg.device.dtype)
    sub_ctx = stages.StageContext(ref=ctx.ref, cfg=ctx.cfg, device=device, runs=ctx.runs, built=part, part=name,
                                  on_stage=ctx.on_stage, reference_of=ctx.reference_of, started=ctx.started)
    _run_loop(selected, sub_ctx, device, sub)
    _attribute(sub, sub_ctx, device)
    _finish(sub, sub_ctx, device)
    with contextlib.suppress(Exception):  # the next component has the device to itself
        part.model.to("cpu")
    parts.keep(key, ctx.ref.model_id, sub)
    return sub


def _run_loop(selected: list[Stage], ctx: stages.StageContext, device: Device, record: ModelRecord, *,
              on_earned: Callable[[ModelRecord], None] | None = None) -> None:
    """Run ``selected`` in order into ``record``; a model of several components stops
    after its load (each component runs the rest). ``on_earned`` is handed the record so
    far before a stage with a limit of its own."""
    passed: set[Stage] = set()
    stop = False
    for stage in selected:
        if ctx.built is not None and ctx.built.components:
            break
        if stage is Stage.GENERATE and not stages.generates(ctx):
            continue  # a model that does not generate has no generate stage (never a failure)
        if stop or not all(n in passed for n in NEEDS[stage]) or _compile_blocked(stage, record):
            record.stages[stage.value] = StageResult(Status.BLOCKED)
            continue
        if stage in OWN_LIMIT and on_earned is not None:
            _publish_earned(record, ctx, device, on_earned)
        result, found, completed = _run_one(stage, ctx, device, record)
        record.stages[stage.value] = result
        for reason in found:
            if reason not in record.blockers:
                record.blockers.append(reason)
        # A stage that ran to its end (blockers recorded on the way under --collect-all,
        # or only a soft one) produced what later stages need.
        if completed or (result.reason is not None and kind_info(result.reason.kind).soft):
            passed.add(stage)
        elif stage not in LEAVES and (not ctx.cfg.device.collect_all or stage in (Stage.LOAD, Stage.TO_DEVICE)):
            stop = True


def _compile_blocked(stage: Stage, record: ModelRecord) -> bool:
    """Whether ``stage`` is the shapes stage after a compile that found a blocker: even
    under ``--collect-all`` the other shapes would only meet the same blocker again."""
    compiled = record.stages.get(Stage.COMPILE.value)
    return stage is Stage.SHAPES and (compiled is None or compiled.status is not Status.PASS)


def _run_one(
    stage: Stage, ctx: stages.StageContext, device: Device, record: ModelRecord
) -> tuple[StageResult, list[Reason], bool]:
    """One stage: its result, every blocker found in it (each naming the stage), and
    whether it ran to its end. A stage during which a blocker was recorded fails, even
    when it ran to its end."""
    _mark(ctx, stage)
    started = time.perf_counter()
    recording = Recording()
    raised: Reason | None = None
    compiled: dict[str, float] = {}
    limit: deadline.Deadline | None = None
    try:
        with compile_time.measured(device) as compiled, device.recording() as recording, \
                _own_limit(stage, ctx) as limit:
            STAGE_FUNCS[stage](ctx)
    except Exception as exc:
        if isinstance(exc, deadline.StageOutOfTime) or (limit is not None and limit.fired):
            return _out_of_time(stage, ctx, record, compiled, seconds=time.perf_counter() - started)
        raised = dataclasses.replace(classify(exc, stage=stage), stage=stage.value)
    if compiled:
        record.compile_phases[stage.value] = compiled
    _merge_recording(record, recording)
    found = [dataclasses.replace(r, stage=r.stage or stage.value) for r in [*recording.blockers, *ctx.found_blockers]]
    ctx.found_blockers.clear()
    if raised is not None:
        found = [r for r in found if r != raised] + [raised]
    seconds = time.perf_counter() - started
    if not found:
        return StageResult(Status.PASS, seconds), [], True
    reason = found[0] if raised is None else raised
    return StageResult(Status.FAIL, seconds, reason), found, raised is None


def _own_limit(stage: Stage, ctx: stages.StageContext) -> contextlib.AbstractContextManager[deadline.Deadline | None]:
    """The stage's own time limit (``OWN_LIMIT``), within what is left of the model's
    ``--timeout``; no limit for the other stages."""
    setting = OWN_LIMIT.get(stage)
    if setting is None:
        return contextlib.nullcontext()
    seconds = deadline.stage_limit(getattr(ctx.cfg.check, setting), model_timeout=ctx.cfg.execution.timeout,
                                   model_started=ctx.started)
    return deadline.limited(stage.value, seconds)


def _out_of_time(stage: Stage, ctx: stages.StageContext, record: ModelRecord, compiled: dict[str, float], *,
                 seconds: float) -> tuple[StageResult, list[Reason], bool]:
    """A stage past its own limit: a timeout of that stage, no blocker of the model (the
    earlier stages' verdicts stand); the shapes it finished stay in its findings."""
    import torch._dynamo

    with contextlib.suppress(Exception):  # half-made graphs must not serve the next model
        torch._dynamo.reset()
    if compiled:
        record.compile_phases[stage.value] = compiled
    setting = OWN_LIMIT[stage]
    message = (f"the {stage.value} stage ran past its time limit ({seconds:.0f}s; --{setting.replace('_', '-')} "
               f"{getattr(ctx.cfg.check, setting):g}s, within the model's --timeout); the earlier stages' verdicts stand")
    found = ctx.findings.setdefault(stage.value, {})
    if isinstance(found, dict):
        found["verdict"] = "timeout"
        found["limit_s"] = round(seconds, 1)
        if "failed_at" in found:
            found["stopped_at"] = found.pop("failed_at")
    return StageResult(Status.TIMEOUT, seconds, Reason(ReasonKind.TIMEOUT, message=message, stage=stage.value)), [], False


def _publish_earned(record: ModelRecord, ctx: stages.StageContext, device: Device,
                    on_earned: Callable[[ModelRecord], None]) -> None:
    """Hand over what the model has earned before a stage with a limit of its own (a
    worker sends it to its parent): should the worker be killed in that stage, the record
    keeps these verdicts."""
    with contextlib.suppress(Exception):  # the snapshot is a safety net, never the check's failure
        earned = copy.deepcopy(record)
        _finish(earned, ctx, device)
        earned.seconds = time.perf_counter() - ctx.started
        on_earned(earned)


def _merge_recording(record: ModelRecord, recording: Recording) -> None:
    for op, count in recording.fallback_ops.items():
        record.fallback_ops[op] = record.fallback_ops.get(op, 0) + int(count)
    record.compile_problems.extend(p for p in recording.compile_problems if p not in record.compile_problems)


def _attribute(record: ModelRecord, ctx: stages.StageContext, device: Device) -> None:
    """Host-side overruns are ours; a device failure the CPU control repeats is not the device's."""
    upstream_fails = ctx.built is not None and "upstream_control" in ctx.built.notes
    record.blockers = [origins.on_host(b, upstream_fails=upstream_fails) for b in record.blockers]
    for name, result in record.stages.items():
        if result.reason is not None:
            record.stages[name] = dataclasses.replace(result, reason=origins.on_host(result.reason, upstream_fails=upstream_fails))
    stage = control.needs_control(record, device.name)
    if stage is None or ctx.built is None:
        return
    try:
        record.control = control.run_control(ctx, stage)
    except Exception as exc:  # noqa: BLE001 - a control that cannot run proves nothing
        record.control = {"stage": stage.value, "status": Status.ERROR.value, "reason": classify(exc).to_dict()}
        return
    control.attribute(record, record.control, upstream_fails=upstream_fails or _beyond_one_graph(ctx, record.control),
                      device_name=device.name)


def _beyond_one_graph(ctx: stages.StageContext, verdict: dict) -> bool:
    """Under ``--whole-graph``, a compile the CPU control cannot capture as one graph either
    (data-dependent branching, guards on data-dependent sizes) is the model's code meeting
    the mode the team chose: the model's, not our harness's."""
    return bool(ctx.cfg.device.whole_graph and verdict.get("stage") == Stage.COMPILE.value
                and verdict.get("status") == Status.FAIL.value)


def _finish(record: ModelRecord, ctx: stages.StageContext, device: Device) -> None:
    built = ctx.built
    if built is not None:
        record.architecture = built.architecture
        record.model_type = record.model_type or built.model_type
        record.num_parameters = built.num_parameters
        record.notes.update({k: v for k, v in built.notes.items() if isinstance(v, (str, int, float, bool))})
    findings = ctx.findings
    quantization = built.quantization if built is not None and built.quantization else findings.get("quantization")
    if quantization:
        record.quantization = dict(quantization)
        package = quantization.get("package")
        if package and quantization.get("package_version"):
            record.versions.setdefault(package, quantization["package_version"])
    record.max_abs_diff = findings.get("max_abs_diff")
    record.numerics = dict(findings.get("numerics") or {})
    record.graph_breaks = int(findings.get("graph_breaks", 0))
    record.graph_break_reasons = list(findings.get("graph_break_reasons", []))
    record.shapes = dict(findings.get("shapes") or {})
    record.generation = dict(findings.get("generation") or {})
    for key in ("compile_backend", "params_with_grad", "retied_weights", "backward_mode"):
        if key in findings:
            record.notes[key] = findings[key]
    with contextlib.suppress(Exception):
        record.peak_memory_bytes = device.peak_memory_bytes()
    record.reason = record.blockers[0] if record.blockers else None
    record.status = _model_status(record.reason)
    record.settle()  # the outcome, decided once over every blocker


def _model_status(reason: Reason | None) -> Status:
    return Status.PASS if reason is None else kind_info(reason.kind).status


def _mark(ctx: stages.StageContext, stage: Stage) -> None:
    """Tell the context's listener which stage runs, so a crash record can name it."""
    if ctx.on_stage is not None:
        with contextlib.suppress(Exception):
            ctx.on_stage(stage.value)
