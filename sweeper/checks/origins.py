"""Origins decided without running anything: where a blocker was found says whose it is.

Light on purpose (no torch): executors call it for the records of crashed workers.
"""

from __future__ import annotations

import dataclasses

from sweeper.records import Origin, Reason, ReasonKind, Stage
from sweeper.settings.errors import SweeperError

# Origins a control (or the place a failure happened) can overturn: a failure already
# ours or the environment's stays so.
DISPUTABLE = frozenset({Origin.DEVICE, Origin.LOWERING_TOOL, Origin.MODEL})


# Kinds a device raises on purpose for what its profile refuses, and a lowering tool's
# finding on an op the profile calls native.
_DECLARED_KINDS = frozenset({
    ReasonKind.UNSUPPORTED_OP, ReasonKind.UNSUPPORTED_DTYPE, ReasonKind.UNSUPPORTED_FEATURE,
    ReasonKind.DYNAMIC_SHAPE, ReasonKind.COMPILE_ERROR, ReasonKind.LOWERING_TOOL_ERROR,
})


def _deliberate_types(cls: type = SweeperError) -> set[str]:
    """Names of the error classes that carry one of the declared kinds (devices' plugins
    included: any subclass of ``SweeperError`` counts)."""
    names = set()
    for sub in cls.__subclasses__():
        if getattr(sub, "reason_kind", None) in _DECLARED_KINDS:
            names.add(sub.__name__)
        names |= _deliberate_types(sub)
    return names


def declared(reason: Reason) -> bool:
    """A gap the device declared: raised on purpose by the device (its profile refuses it)
    or by its lowering tool, never inferred from a message. It stays the device's (or the
    tool's) whatever the CPU control does for other reasons."""
    return reason.kind in _DECLARED_KINDS and reason.exc_type in _deliberate_types()


def on_host(reason: Reason, *, upstream_fails: bool) -> Reason:
    """Blockers of host-side work are never the device's. Load builds the model and its
    CPU reference on the CPU alone: what fails there is the model's when the unshrunk
    config fails the same way, else ours. Memory or time that ran out while building,
    tracing or lowering (load, compile) is the harness's, not the device's oom/timeout."""
    if reason.origin not in DISPUTABLE:
        return reason
    if reason.stage is None and reason.kind.value in ("oom", "timeout", "crash"):
        # The worker went before the model began a stage: nothing of the device had run.
        return dataclasses.replace(reason, origin=Origin.HARNESS)
    if reason.stage == Stage.LOAD.value:
        if reason.kind.value in ("oom", "timeout"):
            return dataclasses.replace(reason, origin=Origin.HARNESS, message=f"host-side work in load: {reason.message}")
        return dataclasses.replace(reason, origin=Origin.MODEL if upstream_fails else Origin.HARNESS)
    if reason.stage == Stage.COMPILE.value and reason.kind.value in ("oom", "timeout"):
        return dataclasses.replace(reason, origin=Origin.HARNESS, message=f"host-side work in compile: {reason.message}")
    return reason
