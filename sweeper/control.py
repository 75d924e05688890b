"""The CPU control: proof of whose a device failure is.

A model that fails a stage on the device has that stage rerun on the CPU with the same
built model, inputs and seed (for compile: the same capture with ``aot_eager``). A stage
that fails on the CPU too is not the device's: it is the model's when the unshrunk
config fails the same way (the materializer's meta control says so), else ours (our
inputs, our shrink). Only failing models pay for it; it runs after every device stage,
so moving the model back to the CPU disturbs nothing.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import torch

from sweeper import stages
from sweeper.classify import classify
from sweeper.devices.base import get_device
from sweeper.origins import DISPUTABLE
from sweeper.records import ModelRecord, Origin, Reason, ReasonKind, Stage, Status

# Stages a control can rerun: load already ran on the CPU, and moving to the CPU is no test.
CONTROLLED = (Stage.FORWARD, Stage.BACKWARD, Stage.COMPILE)
# Failures nobody recognised (raised in model code, or by whatever sweeper called): the control
# says whose they are, the device's when the CPU passes.
UNPLACED = frozenset({ReasonKind.MODEL_ERROR, ReasonKind.UNKNOWN, ReasonKind.HARNESS})
CONTROL_BACKEND = "aot_eager"
SEED = 0


def needs_control(record: ModelRecord, device_name: str) -> Stage | None:
    """The earliest device stage with a disputable blocker, or ``None``."""
    if device_name == "cpu":
        return None  # the device is the CPU: a control would be the same run
    for stage in CONTROLLED:
        if any(b.stage == stage.value and _disputable(b) for b in record.blockers):
            return stage
    return None


def _disputable(reason: Reason) -> bool:
    return reason.origin in DISPUTABLE or reason.kind in UNPLACED


def run_control(ctx: stages.StageContext, stage: Stage) -> dict[str, Any]:
    """Rerun the stages up to ``stage`` on the CPU; what happened, as the record keeps it."""
    built = ctx.built
    assert built is not None
    cfg = ctx.cfg.replace(device="cpu", compile_backend=CONTROL_BACKEND)
    cpu = stages.StageContext(ref=ctx.ref, cfg=cfg, device=get_device("cpu"), built=built)
    built.model.to("cpu")
    cpu.inputs = dict(built.inputs)
    funcs = {Stage.FORWARD: stages.forward, Stage.BACKWARD: stages.backward, Stage.COMPILE: stages.compile_stage}
    # Compile needs no forward of its own; backward needs the forward's output.
    ran = [Stage.COMPILE] if stage is Stage.COMPILE else [Stage.FORWARD] + ([Stage.BACKWARD] if stage is Stage.BACKWARD else [])
    for step in ran:
        torch.manual_seed(SEED)
        try:
            with torch.enable_grad():  # as in the device run: a no-grad control proves less
                funcs[step](cpu)
        except Exception as exc:  # noqa: BLE001 - the control's own failure is its verdict
            reason = dataclasses.replace(classify(exc, stage=step), stage=step.value)
            return {"stage": step.value, "status": Status.FAIL.value, "reason": reason.to_dict(),
                    "backend": CONTROL_BACKEND if step is Stage.COMPILE else None}
    return {"stage": stage.value, "status": Status.PASS.value, "reason": None,
            "backend": CONTROL_BACKEND if stage is Stage.COMPILE else None}


def attribute(record: ModelRecord, control: dict[str, Any], *, upstream_fails: bool) -> None:
    """Re-attribute blockers by the control's verdict. Failed on the CPU too: the blockers
    of that stage and later ones (they ran on a model that cannot run anyway) are the
    model's or ours. Passed on the CPU: an unplaced failure of that stage is the device's."""
    order = [s.value for s in Stage]
    at = order.index(control["stage"])
    if control["status"] == Status.FAIL.value:
        origin = Origin.MODEL if upstream_fails else Origin.HARNESS

        def judged(b: Reason) -> Reason:
            late = b.stage in order and order.index(b.stage) >= at
            return dataclasses.replace(b, origin=origin) if late and _disputable(b) else b
    elif control["status"] == Status.PASS.value:

        def judged(b: Reason) -> Reason:
            return dataclasses.replace(b, origin=Origin.DEVICE) if b.stage == control["stage"] and b.kind in UNPLACED else b
    else:
        return
    record.blockers = [judged(b) for b in record.blockers]
    for name, result in record.stages.items():
        if result.reason is not None:
            record.stages[name] = dataclasses.replace(result, reason=judged(result.reason))
