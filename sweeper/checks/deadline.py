"""A stage's own time limit, kept inside the worker so the stage's end is a verdict.

The executors stop a model that runs past ``--timeout`` by killing its worker: whatever
the model earned before is gone with it. A stage that may take long for reasons that say
nothing about the earlier stages (the shapes stage recompiles the model at each new shape)
gets a limit of its own: past it, ``StageOutOfTime`` is raised in the stage (a real-time
alarm interrupts a compile or a run between Python steps), the stage is recorded as a
timeout and the model keeps every earlier stage's verdict.

The limit never reaches past what is left of the model's ``--timeout`` (less a margin to
write the record), so the worker's own deadline is met first.
"""

from __future__ import annotations

import contextlib
import signal
import threading
import time
from collections.abc import Iterator

# Left of the model's --timeout after a stage's limit: enough to settle and send the record.
MARGIN_S = 10.0
MARGIN_SHARE = 0.1


class StageOutOfTime(Exception):  # noqa: N818 - it says what happened, as the record does
    """The stage ran past its own time limit."""

    def __init__(self, stage: str, limit: float) -> None:
        super().__init__(f"the {stage} stage ran past its limit of {limit:g}s")
        self.stage = stage
        self.limit = limit


def stage_limit(setting: float, *, model_timeout: float | None, model_started: float) -> float:
    """The seconds a stage may run: ``setting``, cut to what is left of the model's
    timeout (``time.perf_counter`` seconds since ``model_started``) less a margin; 0 when
    nothing is left."""
    if model_timeout is None:
        return max(0.0, setting)
    margin = max(MARGIN_S, MARGIN_SHARE * model_timeout)
    left = model_timeout - (time.perf_counter() - model_started) - margin
    return max(0.0, min(setting, left))


class Deadline:
    """A stage's limit; ``fired`` says whether the alarm interrupted the stage."""

    def __init__(self, stage: str, limit: float) -> None:
        self.stage = stage
        self.limit = limit
        self.fired = False


@contextlib.contextmanager
def limited(stage: str, limit: float) -> Iterator[Deadline]:
    """Run the block with ``limit`` seconds: past them ``StageOutOfTime`` is raised inside
    it by a real-time alarm (main thread only; elsewhere the stage runs on to the model's
    ``--timeout``, which the executor enforces).
    The caller tells the stage's timeout from its other failures by ``Deadline.fired``: a
    compiler may wrap the exception in its own."""
    deadline = Deadline(stage, limit)
    if limit <= 0:
        deadline.fired = True
        raise StageOutOfTime(stage, limit)
    if threading.current_thread() is not threading.main_thread():
        yield deadline
        return

    def alarm(_signum: int, _frame: object) -> None:
        deadline.fired = True
        raise StageOutOfTime(stage, limit)

    previous = signal.signal(signal.SIGALRM, alarm)
    signal.setitimer(signal.ITIMER_REAL, limit)
    try:
        yield deadline
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
