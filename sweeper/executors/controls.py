"""The CPU control of a worker that crashed, hung or ran out of memory in a device stage.

Light on purpose (no torch): the slot calls it in the parent. Before a crash, timeout or
oom of a device stage is the device's, the same stage reruns on the CPU in a fresh worker
under the same time and memory limits (``Checker.control``). Passed there: the device's.
Failed there too (out of memory or time on the host, a crash, an error): not the device's
but ours, host-side work that our limits do not fit. No control could run: unproven, so
never the device's either.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from sweeper.records import ModelRecord, Origin, Reason, ReasonKind, Stage, Status

# Failures of the worker as a whole, which only a rerun elsewhere can place.
OVERRUNS = frozenset({ReasonKind.CRASH, ReasonKind.OOM, ReasonKind.TIMEOUT})
# Stages that run on the device; load and host-side compile work are the harness's already.
CONTROLLED = frozenset({Stage.FORWARD.value, Stage.BACKWARD.value, Stage.COMPILE.value, Stage.GENERATE.value,
                        Stage.SHAPES.value})
MAX_MESSAGE = 600


def stage_to_control(record: ModelRecord, cfg: Any) -> str | None:
    """The stage to rerun on the CPU for ``record`` (a worker failure), or ``None`` when
    nothing is to be proven: not a device-origin overrun of a device stage, or the device
    is the CPU already."""
    reason = record.reason
    if reason is None or reason.kind not in OVERRUNS or reason.origin is not Origin.DEVICE:
        return None
    if reason.stage not in CONTROLLED or str(cfg.device.spec).split(":")[0] == "cpu":
        return None
    return reason.stage


def verdict_of_failure(control: ModelRecord, of: ModelRecord) -> dict[str, Any]:
    """The verdict of a control whose own worker crashed, hung or ran out of memory."""
    reason = control.reason
    stage = of.reason.stage if of.reason is not None else None
    return {"stage": stage, "status": control.status.value, "backend": None,
            "reason": reason.to_dict() if reason is not None else None}


def judge(record: ModelRecord, verdict: dict[str, Any] | None) -> ModelRecord:
    """``record`` (a device stage's crash, timeout or oom) after its CPU control: the
    device's only when the control passed; else the harness's, saying why."""
    record.control = verdict
    reason = record.reason
    if reason is None or (verdict is not None and verdict.get("status") == Status.PASS.value):
        return record.settle()
    if verdict is None:
        why = "not proven the device's: no CPU control could run"
    else:
        what = (verdict.get("reason") or {}).get("message") or verdict.get("status")
        why = f"host-side: the same stage on the CPU under the same limits did not pass either ({what})"
    message = f"{reason.message}; {why}"
    new = dataclasses.replace(reason, origin=Origin.HARNESS, message=message[:MAX_MESSAGE])
    _replace(record, reason, new)
    # The outcome was decided on the crash alone: decide it again with the control's verdict.
    return record.settle()


def _replace(record: ModelRecord, old: Reason, new: Reason) -> None:
    record.reason = new
    record.blockers = [new if b == old else b for b in record.blockers]
    for name, result in record.stages.items():
        if result.reason == old:
            record.stages[name] = dataclasses.replace(result, reason=new)
