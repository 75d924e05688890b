"""check_model: run one model's stages on one device and return its record; never raises.

Each stage's exception is caught here, in one place, and classified once. A stage after a
failed one is ``blocked`` — except after a *soft* failure (the model is wrong but still
runs, e.g. untied weights) or with ``--collect-all``, where later stages still run when
what they need exists, so one run finds every blocker of the model.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Collection

from sweeper import stages
from sweeper.classify import classify
from sweeper.config import SweepConfig
from sweeper.devices.base import Device, Recording, get_device
from sweeper.records import (
    ENVIRONMENT_KINDS,
    ModelRecord,
    ModelRef,
    Reason,
    ReasonKind,
    Stage,
    StageResult,
    Status,
    base_record,
)
from sweeper.repro import repro_command
from sweeper.versions import versions

SOFT_KINDS = frozenset({ReasonKind.UNTIED_WEIGHTS})
SKIP_KINDS = frozenset({ReasonKind.UNSUPPORTED_LIBRARY, ReasonKind.REMOTE_CODE})
STAGE_FUNCS: dict[Stage, Callable[[stages.StageContext], None]] = {
    Stage.LOAD: stages.load,
    Stage.TO_DEVICE: stages.to_device,
    Stage.FORWARD: stages.forward,
    Stage.BACKWARD: stages.backward,
    Stage.COMPILE: stages.compile_stage,
}
# What each stage needs to have passed (load is implied by the selection).
NEEDS: dict[Stage, tuple[Stage, ...]] = {
    Stage.LOAD: (),
    Stage.TO_DEVICE: (Stage.LOAD,),
    Stage.FORWARD: (Stage.LOAD, Stage.TO_DEVICE),
    Stage.BACKWARD: (Stage.LOAD, Stage.TO_DEVICE, Stage.FORWARD),
    Stage.COMPILE: (Stage.LOAD, Stage.TO_DEVICE),
}

_DEVICES: dict[tuple, Device] = {}


def device_for(cfg: SweepConfig) -> Device:
    """One set-up device per process and settings (a PrivateUse1 name registers once)."""
    key = (cfg.device, cfg.device_profile, cfg.collect_all)
    if key not in _DEVICES:
        device = get_device(cfg.device, profile=cfg.device_profile, collect_all=cfg.collect_all)
        device.setup()
        _DEVICES[key] = device
    return _DEVICES[key]


def check_model(ref: ModelRef, cfg: SweepConfig, *, sweep_id: str = "") -> ModelRecord:
    """Run the selected stages for ``ref`` on ``cfg.device``; always returns a record."""
    started = time.perf_counter()
    record = base_record(ref, sweep_id=sweep_id, device=cfg.device, status=Status.PASS, weights=cfg.weights, dtype=cfg.dtype)
    record.repro = repro_command(ref, cfg)
    try:
        device = device_for(cfg)
        record.versions = versions(device)
        _run_stages(ref, cfg, device, record)
    except Exception as exc:  # set-up outside any stage: still one record
        reason = classify(exc)
        record.status, record.reason, record.blockers = Status.ERROR, reason, [reason]
    record.seconds = time.perf_counter() - started
    return record


def selected_stages(names: Collection[str]) -> list[Stage]:
    """The stages named, with the ones they need, in pipeline order (``--stages forward``
    runs load and to_device first: a forward on the device needs the model there)."""
    wanted = {Stage.LOAD} | {s for s in Stage if s.value in names}
    for stage in list(wanted):
        wanted.update(NEEDS[stage])
    return [s for s in Stage if s in wanted]


def _run_stages(ref: ModelRef, cfg: SweepConfig, device: Device, record: ModelRecord) -> None:
    ctx = stages.StageContext(ref=ref, cfg=cfg, device=device)
    selected = selected_stages(cfg.stages)
    passed: set[Stage] = set()
    stop = False
    device.reset_peak_memory()
    for stage in selected:
        if stop or not all(n in passed for n in NEEDS[stage]):
            record.stages[stage.value] = StageResult(Status.BLOCKED)
            continue
        result, recording = _run_one(stage, ctx, device)
        record.stages[stage.value] = result
        _merge_recording(record, recording)
        if result.status is Status.PASS:
            passed.add(stage)
            continue
        assert result.reason is not None
        record.blockers.append(result.reason)
        if result.reason.kind in SOFT_KINDS:
            passed.add(stage)  # the model still runs: keep measuring the rest
        elif not cfg.collect_all or stage in (Stage.LOAD, Stage.TO_DEVICE):
            stop = True
    _finish(record, ctx, device)


def _run_one(stage: Stage, ctx: stages.StageContext, device: Device) -> tuple[StageResult, Recording]:
    _mark(stage)
    started = time.perf_counter()
    recording = Recording()
    try:
        with device.recording() as recording:
            STAGE_FUNCS[stage](ctx)
    except Exception as exc:
        reason = classify(exc, stage=stage)
        return StageResult(Status.FAIL, time.perf_counter() - started, reason), recording
    return StageResult(Status.PASS, time.perf_counter() - started), recording


def _merge_recording(record: ModelRecord, recording: Recording) -> None:
    for op, count in recording.fallback_ops.items():
        record.fallback_ops[op] = record.fallback_ops.get(op, 0) + int(count)
    for reason in recording.blockers:
        if reason not in record.blockers:
            record.blockers.append(reason)
    record.compile_problems.extend(p for p in recording.compile_problems if p not in record.compile_problems)


def _finish(record: ModelRecord, ctx: stages.StageContext, device: Device) -> None:
    built = ctx.built
    if built is not None:
        record.architecture = built.architecture
        record.model_type = record.model_type or built.model_type
        record.num_parameters = built.num_parameters
        record.notes.update({k: v for k, v in built.notes.items() if isinstance(v, (str, int, float, bool))})
    findings = ctx.findings
    record.max_abs_diff = findings.get("max_abs_diff")
    record.numerics = dict(findings.get("numerics") or {})
    record.graph_breaks = int(findings.get("graph_breaks", 0))
    record.graph_break_reasons = list(findings.get("graph_break_reasons", []))
    for key in ("compile_backend", "params_with_grad", "retied_weights"):
        if key in findings:
            record.notes[key] = findings[key]
    with contextlib.suppress(Exception):
        record.peak_memory_bytes = device.peak_memory_bytes()
    record.reason = record.blockers[0] if record.blockers else None
    record.status = _model_status(record.reason)


def _model_status(reason: Reason | None) -> Status:
    if reason is None:
        return Status.PASS
    if reason.kind in SKIP_KINDS:
        return Status.SKIP
    if reason.kind in ENVIRONMENT_KINDS or reason.kind is ReasonKind.HARNESS:
        return Status.ERROR
    if reason.kind is ReasonKind.TIMEOUT:
        return Status.TIMEOUT
    return Status.FAIL


def _mark(stage: Stage) -> None:
    """Tell the executor which stage runs, so a crash record can name it."""
    with contextlib.suppress(Exception):
        from sweeper.executors.progress import mark

        mark(stage=stage.value)
