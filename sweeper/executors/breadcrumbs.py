"""Where a worker is: the model, the stage and the last op, readable after the worker dies.

A worker process that runs models is attached to a small memory-mapped file
(``attach(path)``). Check code calls ``mark(stage=...)`` at each stage start and may call
``mark(op=...)`` before risky operators; each call is one ``memcpy`` into the mapping, so
it is cheap enough to call per op. When the worker segfaults, aborts, hangs or is killed for
memory, the parent reads the file (``read(path)``) and puts the stage and op into the
failure record. Outside a worker (the inline executor, plain scripts) ``mark`` only keeps
the state in memory, where ``current()`` reads it (the inline executor's progress bar).

Before a stage that may run long, the check hands over what the model has earned so far
(``earned(record)``); the worker sends it to its parent (``listen``), whose record of a
worker killed in that stage then keeps the earlier stages' verdicts.
"""

from __future__ import annotations

import mmap
import os
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

SIZE = 4096
_SEP = "\x1f"


@dataclass(frozen=True)
class Breadcrumb:
    """The last state a worker published."""

    key: str | None = None
    stage: str | None = None
    op: str | None = None
    started: float | None = None  # when the model began (time.time())
    updated: float | None = None  # when the last mark was written

    def describe(self) -> str:
        """``in stage forward, last op aten::mm`` (or ``before any stage``)."""
        where = f"in stage {self.stage}" if self.stage else "before any stage"
        return f"{where}, last op {self.op}" if self.op else where


class _State:
    """This process's mapping and the fields last written (a mark updates only some)."""

    def __init__(self) -> None:
        self.mm: mmap.mmap | None = None
        self.key: str | None = None
        self.stage: str | None = None
        self.op: str | None = None
        self.started: float | None = None
        self.on_earned: Callable[[Any], None] | None = None


_STATE = _State()


def listen(on_earned: Callable[[Any], None] | None) -> None:
    """Have ``earned`` hand each snapshot to ``on_earned`` (a worker sends it to its parent)."""
    _STATE.on_earned = on_earned


def earned(record: Any) -> None:
    """Hand over the record of what the current model has earned so far. Never raises."""
    if _STATE.on_earned is None:
        return
    try:
        _STATE.on_earned(record)
    except Exception:  # noqa: BLE001, S110 - a lost snapshot only costs the safety net
        pass


def attach(path: str | os.PathLike[str]) -> None:
    """Publish this process's progress to ``path`` (created, zero-filled, ``SIZE`` bytes)."""
    with open(path, "w+b") as fh:
        fh.write(b"\0" * SIZE)
        fh.flush()
        # The mapping outlives the file object: closing the fd keeps the mapping valid.
        _STATE.mm = mmap.mmap(fh.fileno(), SIZE)


def begin(key: str) -> None:
    """A new model starts: forget the previous model's stage and op."""
    _STATE.key, _STATE.stage, _STATE.op, _STATE.started = key, None, None, time.time()
    _write()


def mark(stage: str | None = None, op: str | None = None) -> None:
    """Record the stage (which clears the op) and/or the op the current model is in.

    Call at each stage start (``mark(stage="forward")``) and, where useful, before an
    operator that may crash (``mark(op="aten::mm")``). Never raises; in memory only outside a worker.
    """
    if stage is not None:
        _STATE.stage, _STATE.op = str(stage.value if hasattr(stage, "value") else stage), None
    if op is not None:
        _STATE.op = str(op)
    if _STATE.mm is not None:  # in the driver (inline) the state is read in-process only
        _write()


def current() -> Breadcrumb:
    """What this process last marked (no file read)."""
    return Breadcrumb(key=_STATE.key, stage=_STATE.stage, op=_STATE.op, started=_STATE.started)


def _write() -> None:
    mm = _STATE.mm
    if mm is None:
        return
    fields = (_STATE.key or "", _STATE.stage or "", _STATE.op or "", f"{_STATE.started or 0:.3f}", f"{time.time():.3f}")
    body = _SEP.join(f.replace(_SEP, " ") for f in fields).encode("utf-8", "replace")[: SIZE - 8]
    # Length prefix first as zero, body, then the length: a reader racing a writer sees
    # either the old length (a stale but whole record) or a length matching the new body.
    mm[0:4] = b"\0\0\0\0"
    mm[8 : 8 + len(body)] = body
    mm[0:4] = len(body).to_bytes(4, "little")


def read(path: str | os.PathLike[str]) -> Breadcrumb:
    """The last progress written to ``path``; an empty ``Breadcrumb`` when none can be read."""
    try:
        raw = Path(path).read_bytes()
    except OSError:
        return Breadcrumb()
    if len(raw) < 8:
        return Breadcrumb()
    length = int.from_bytes(raw[0:4], "little")
    if not 0 < length <= SIZE - 8:
        return Breadcrumb()
    parts = raw[8 : 8 + length].decode("utf-8", "replace").split(_SEP)
    if len(parts) != 5:
        return Breadcrumb()
    key, stage, op, started, updated = parts
    return Breadcrumb(
        key=key or None,
        stage=stage or None,
        op=op or None,
        started=float(started) or None,
        updated=float(updated) or None,
    )
