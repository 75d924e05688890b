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
from sweeper.records import ModelRecord, Origin, Reason, Stage, Status

# Stages a control can rerun: load already ran on the CPU, and moving to the CPU is no test.
CONTROLLED = (Stage.FORWARD, Stage.BACKWARD, Stage.COMPILE)
# Origins a control can overturn: a failure already ours or the environment's stays so.
DISPUTABLE = frozenset({Origin.DEVICE, Origin.LOWERING_TOOL, Origin.MODEL})
CONTROL_BACKEND = "aot_eager"
SEED = 0


def needs_control(record: ModelRecord, device_name: str) -> Stage | None:
    """The earliest device stage with a disputable blocker, or ``None``."""
    if device_name == "cpu":
        return None  # the device is the CPU: a control would be the same run
    for stage in CONTROLLED:
        if any(b.stage == stage.value and b.origin in DISPUTABLE for b in record.blockers):
            return stage
    return None


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
    """Re-attribute the blockers the control disproves: those of the stage the control
    failed and of the stages after it (they ran on a model that cannot run anyway)."""
    if control["status"] != Status.FAIL.value:
        return
    order = [s.value for s in Stage]
    failed_at = order.index(control["stage"])
    origin = Origin.MODEL if upstream_fails else Origin.HARNESS
    record.blockers = [
        dataclasses.replace(b, origin=origin)
        if b.origin in DISPUTABLE and b.stage in order and order.index(b.stage) >= failed_at
        else b
        for b in record.blockers
    ]
    for name, result in record.stages.items():
        if result.reason is not None and result.reason.origin in DISPUTABLE and name in order[failed_at:]:
            record.stages[name] = dataclasses.replace(result, reason=dataclasses.replace(result.reason, origin=origin))


def on_host(reason: Reason, *, upstream_fails: bool) -> Reason:
    """Blockers of host-side work are never the device's. Load builds the model and its
    CPU reference on the CPU alone: what fails there is the model's when the unshrunk
    config fails the same way, else ours. Memory or time that ran out while building,
    tracing or lowering (load, compile) is the harness's, not the device's oom/timeout."""
    if reason.origin not in DISPUTABLE:
        return reason
    if reason.stage == Stage.LOAD.value:
        if reason.kind.value in ("oom", "timeout"):
            return dataclasses.replace(reason, origin=Origin.HARNESS, message=f"host-side work in load: {reason.message}")
        return dataclasses.replace(reason, origin=Origin.MODEL if upstream_fails else Origin.HARNESS)
    if reason.stage == Stage.COMPILE.value and reason.kind.value in ("oom", "timeout"):
        return dataclasses.replace(reason, origin=Origin.HARNESS, message=f"host-side work in compile: {reason.message}")
    return reason
