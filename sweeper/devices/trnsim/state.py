"""Runtime state of the simulated device: active profile, recordings, strict and collect modes.

Kernels call ``note_fallback`` / ``refuse`` here; user code reads what happened through
``recording()``. Counting every op costs time, so ops are only counted while a recording
is open (``RECORDING`` is checked by the kernels before calling ``note_op``).
"""

from __future__ import annotations

import contextlib
import os
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field

import sweeper.devices.trnsim.fastpath as fastpath
from sweeper.devices.trnsim.errors import TrnsimError, UnsupportedOpError
from sweeper.devices.trnsim.profile import Profile, load_profile
from sweeper.records import Reason


@dataclass
class OpRecording:
    """What ran on trnsim inside a ``recording()`` block.

    The simulator's own type (it knows nothing of the sweep's devices): ``TrnsimDevice``
    copies it into the sweep's ``Recording`` when the block ends.
    """

    ops: Counter = field(default_factory=Counter)
    fallback_ops: Counter = field(default_factory=Counter)
    errors: list[str] = field(default_factory=list)
    # Refusals seen but not raised (collect-all mode): the device ran on regardless.
    blockers: list[Reason] = field(default_factory=list)
    # Compiler findings that did not stop compilation (lowering failures, refusals).
    compile_problems: list[str] = field(default_factory=list)


class _State:
    """Process-wide switches; one device per process, so one state."""

    def __init__(self) -> None:
        self.profile: Profile | None = None
        self.recordings: list[OpRecording] = []
        self.strict = False
        self.collect_all = False
        # Where the compiler writes reproducers of lowering-tool failures (None: nowhere).
        # The sweep sets it to OUT/repros; code using trnsim directly can set the env var.
        self.repro_dir: str | None = os.environ.get("TRNSIM_REPRO_DIR") or None

    def get_profile(self) -> Profile:
        if self.profile is None:
            self.profile = load_profile(None)
        return self.profile


STATE = _State()


def active_profile() -> Profile:
    """The profile kernels and the compiler apply (the default one until set)."""
    return STATE.get_profile()


def note_op(op: str) -> None:
    """Count one op in every open recording."""
    for rec in STATE.recordings:
        rec.ops[op] += 1


def note_fallback(op: str) -> None:
    """An op runs on the host: record it; in strict mode it is also refused (raised, or a
    blocker in collect-all mode)."""
    if STATE.strict:
        refuse(UnsupportedOpError(f"{op} has no native trnsim kernel and strict mode forbids host fallback", op=op))
    for rec in STATE.recordings:
        rec.fallback_ops[op] += 1


def refuse(exc: TrnsimError) -> None:
    """Raise ``exc``, or in collect-all mode record it as a blocker and let the caller go on."""
    for rec in STATE.recordings:
        rec.errors.append(str(exc))
    if not STATE.collect_all:
        raise exc
    reason = Reason(kind=exc.reason_kind, message=str(exc), op=exc.op, exc_type=type(exc).__name__)
    for rec in STATE.recordings:
        if reason not in rec.blockers:
            rec.blockers.append(reason)


def note_compile_problem(message: str) -> None:
    """A compiler finding that did not stop compilation."""
    for rec in STATE.recordings:
        rec.compile_problems.append(message)


def flush_counts() -> None:
    """Add the ops the C++ fast path counted since the last flush to every open recording
    (it counts while any is open; a recording's ``ops`` is whole after a flush)."""
    counts = fastpath.take_counts()
    if counts:
        for rec in STATE.recordings:
            rec.ops.update(counts)


@contextlib.contextmanager
def recording() -> Iterator[OpRecording]:
    """Record ops, host fallbacks and refusals inside the block (nests)."""
    rec = OpRecording()
    flush_counts()  # what ran before belongs to the recordings already open
    STATE.recordings.append(rec)
    fastpath.set_counting(True)
    try:
        yield rec
    finally:
        flush_counts()
        STATE.recordings.remove(rec)
        fastpath.set_counting(bool(STATE.recordings))


@contextlib.contextmanager
def strict(enabled: bool = True) -> Iterator[None]:
    """Inside the block every host fallback raises ``UnsupportedOpError``."""
    old, STATE.strict = STATE.strict, enabled
    try:
        yield
    finally:
        STATE.strict = old


@contextlib.contextmanager
def collect_all(enabled: bool = True) -> Iterator[None]:
    """Inside the block refusals are recorded as blockers and the op runs on the host."""
    old, STATE.collect_all = STATE.collect_all, enabled
    try:
        yield
    finally:
        STATE.collect_all = old


def set_repro_dir(path: str | None) -> None:
    """Write reproducers of lowering-tool failures under ``path`` (None: none)."""
    STATE.repro_dir = path


def use_profile(profile: Profile) -> None:
    """Make ``profile`` the active one (kernels read it at every call)."""
    STATE.profile = profile
