"""The CPU control: proof of whose a device failure is.

A model that fails a stage on the device has that stage rerun on the CPU with the model
and inputs built afresh there, the same seed (for compile: the same capture with
``aot_eager``). A stage
that fails on the CPU too is not the device's: it is the model's when the unshrunk
config fails the same way (the materializer's meta control says so), else ours (our
inputs, our shrink). Only failing models pay for it; it runs after every device stage,
so moving the model back to the CPU disturbs nothing.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable
from typing import Any

import torch

from sweeper.checks import origins, stages
from sweeper.checks.classify import classify
from sweeper.checks.origins import DISPUTABLE
from sweeper.devices.base import get_device
from sweeper.records import HARNESS_ONLY, ModelRecord, Origin, Reason, ReasonKind, Stage, Status

# Stages a control can rerun: load already ran on the CPU, and moving to the CPU is no test.
CONTROLLED = (Stage.FORWARD, Stage.BACKWARD, Stage.COMPILE, Stage.GENERATE, Stage.SHAPES)
# Failures nobody recognised (raised in model code, or by whatever sweeper called): the control
# says whose they are, the device's when the CPU passes.
UNPLACED = frozenset({ReasonKind.MODEL_ERROR, ReasonKind.UNKNOWN, ReasonKind.HARNESS})
CONTROL_BACKEND = "aot_eager"
SEED = 0


def needs_control(record: ModelRecord, device_name: str) -> Stage | None:
    """The earliest device stage with a disputable blocker whose origin is not already
    proven, or ``None``. A gap the device declared (its profile's refusal, its lowering
    tool's finding) is proven by the declaration: the control could not change it."""
    if device_name == "cpu":
        return None  # the device is the CPU: a control would be the same run
    for stage in CONTROLLED:
        if any(b.stage == stage.value and _disputable(b) and not origins.declared(b) for b in record.blockers):
            return stage
    return None


def _disputable(reason: Reason) -> bool:
    return reason.origin in DISPUTABLE or reason.kind in UNPLACED


def run_control(ctx: stages.StageContext, stage: Stage) -> dict[str, Any]:
    """Build the model afresh on the CPU and rerun the stages up to ``stage`` there; what
    happened, as the record keeps it. The device run's model is not reused: whatever it
    built on the device (caches, buffers made in forward) would leak into the control."""
    cfg = ctx.cfg.replace(device="cpu", compile_backend=CONTROL_BACKEND)
    cpu = stages.StageContext(ref=ctx.ref, cfg=cfg, device=get_device("cpu"), runs=frozenset({"load"}), part=ctx.part)
    torch.manual_seed(SEED)
    try:
        stages.load(cpu)  # on the CPU device: builds, no reference run
    except Exception as exc:  # noqa: BLE001 - a control that cannot build proves nothing
        reason = dataclasses.replace(classify(exc, stage=Stage.LOAD), stage=Stage.LOAD.value)
        return {"stage": stage.value, "status": Status.ERROR.value, "reason": reason.to_dict(), "backend": None}
    assert cpu.built is not None
    cpu.inputs = dict(cpu.built.inputs)
    funcs = {Stage.FORWARD: stages.forward, Stage.BACKWARD: stages.backward, Stage.COMPILE: stages.compile_stage,
             Stage.GENERATE: stages.generate_stage, Stage.SHAPES: stages.shapes_stage}
    # Compile, generate and shapes need no forward of their own; backward needs the forward's output.
    ran = [stage] if stage in (Stage.COMPILE, Stage.GENERATE, Stage.SHAPES) else \
        [Stage.FORWARD] + ([Stage.BACKWARD] if stage is Stage.BACKWARD else [])
    if stage in (Stage.COMPILE, Stage.GENERATE, Stage.SHAPES):
        torch._dynamo.reset()  # nothing the device's compilation cached (graphs, guards) serves the control
    for step in ran:
        torch.manual_seed(SEED)
        try:
            with torch.enable_grad():  # as in the device run: a no-grad control proves less
                funcs[step](cpu)
        except Exception as exc:  # noqa: BLE001 - the control's own failure is its verdict
            reason = dataclasses.replace(classify(exc, stage=step), stage=step.value)
            return {"stage": step.value, "status": Status.FAIL.value, "reason": reason.to_dict(),
                    "backend": _backend(step.value)}
    return {"stage": stage.value, "status": Status.PASS.value, "reason": None,
            "backend": _backend(stage.value)}


def verdict_of(record: ModelRecord, stage: str) -> dict[str, Any]:
    """The control verdict of a whole CPU run made to control ``stage`` (the rerun of a
    worker that crashed, hung or ran out of memory): pass when every stage up to it passed."""
    for result in record.stages.values():
        if result.status is Status.FAIL:
            reason = result.reason.to_dict() if result.reason is not None else None
            return {"stage": stage, "status": Status.FAIL.value, "reason": reason, "backend": _backend(stage)}
    if record.status is Status.ERROR and record.reason is not None:  # set-up outside any stage
        return {"stage": stage, "status": Status.ERROR.value, "reason": record.reason.to_dict(), "backend": None}
    return {"stage": stage, "status": Status.PASS.value, "reason": None, "backend": _backend(stage)}


def _backend(stage: str) -> str | None:
    return CONTROL_BACKEND if stage in (Stage.COMPILE.value, Stage.GENERATE.value, Stage.SHAPES.value) else None


def leaked_device(control: dict[str, Any], device_name: str) -> bool:
    """Whether the control failed with the device's tensors in it: a CPU-only run that
    meets a device tensor got it from us (a cache or buffer made on the device), so its
    failure proves nothing about the model or the device."""
    message = ((control.get("reason") or {}).get("message") or "")
    return control.get("status") == Status.FAIL.value and device_name != "cpu" and \
        re.search(rf"\b{re.escape(device_name)}\b", message) is not None and "device" in message.lower()


def attribute(record: ModelRecord, control: dict[str, Any], *, upstream_fails: bool, device_name: str = "") -> None:
    """Re-attribute blockers by the control's verdict.

    Passed on the CPU: an unplaced failure of that stage is the device's. Failed on the
    CPU too: the disputable blockers of that stage and later ones (they ran on a model that
    cannot run anyway) are the model's or ours, except gaps the device declared (a refusal
    by its profile, a lowering tool's finding): those stay, and the control's failure is
    recorded beside them as a finding of its own. A control that failed with device tensors
    in it changes no blocker: its failure is our bug, recorded beside them.
    """
    if control["status"] == Status.PASS.value:
        def judged(b: Reason) -> Reason:
            # Sweeper's own failures stay ours (``HARNESS_ONLY``): a control passing on the
            # CPU proves the device differs, not that the harness did right by it.
            device_only = b.stage == control["stage"] and b.kind in UNPLACED and b.kind not in HARNESS_ONLY
            return dataclasses.replace(b, origin=Origin.DEVICE) if device_only else b
        _rewrite(record, judged)
        return
    if control["status"] != Status.FAIL.value:
        return
    failure = Reason.from_dict(control["reason"])
    assert failure is not None
    if leaked_device(control, device_name):
        leak = dataclasses.replace(failure, kind=ReasonKind.HARNESS, op=None)
        _add_finding(record, leak, Origin.HARNESS, "CPU control met device tensors (the harness leaked them into it)")
        return
    order = [s.value for s in Stage]
    at = order.index(control["stage"])
    origin = Origin.MODEL if upstream_fails else Origin.HARNESS
    kept: list[Reason] = []

    def judged(b: Reason) -> Reason:
        late = b.stage in order and order.index(b.stage) >= at
        if not (late and _disputable(b)):
            return b
        if origins.declared(b):
            kept.append(b)
            return b
        return dataclasses.replace(b, origin=origin)

    _rewrite(record, judged)
    if kept:
        _add_finding(record, failure, origin, "CPU control failed too, for a reason of its own")


def _rewrite(record: ModelRecord, judged: Callable[[Reason], Reason]) -> None:
    record.blockers = [judged(b) for b in record.blockers]
    for name, result in record.stages.items():
        if result.reason is not None:
            record.stages[name] = dataclasses.replace(result, reason=judged(result.reason))


def _add_finding(record: ModelRecord, failure: Reason, origin: Origin, what: str) -> None:
    """The control's failure as a blocker of its own, beside the device run's."""
    finding = dataclasses.replace(failure, origin=origin, message=f"{what}: {failure.message}")
    if finding not in record.blockers:
        record.blockers.append(finding)
