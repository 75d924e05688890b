"""Origins decided without running anything: where a blocker was found says whose it is.

Light on purpose (no torch): executors call it for the records of crashed workers.
"""

from __future__ import annotations

import dataclasses

from sweeper.records import Origin, Reason, Stage

# Origins a control (or the place a failure happened) can overturn: a failure already
# ours or the environment's stays so.
DISPUTABLE = frozenset({Origin.DEVICE, Origin.LOWERING_TOOL, Origin.MODEL})


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
