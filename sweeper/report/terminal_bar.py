"""Progress on the terminal: a live bar on a TTY, one plain line per model otherwise.

A person sees something at once and all along: ``say`` prints a step as it starts
(planning, starting Ray, starting workers), the bar is redrawn every second while models
run (each running model's elapsed time and stage, read from the executor's ``running``),
and a failing model's name and reason are printed the moment its record arrives. Off a
terminal (CI logs), a line names the running models when nothing else was printed for
``HEARTBEAT_S``.
"""

from __future__ import annotations

import sys
import threading
import time
from collections import Counter
from collections.abc import Callable
from typing import Any, TextIO

from sweeper.records import ModelRecord, Status

REDRAW_S = 1.0
# Copies of a check arrive by the thousand in a moment: the bar follows them this often.
COPY_REDRAW_S = 0.1
HEARTBEAT_S = 30.0
QUIET_STATUSES = frozenset({Status.PASS, Status.SKIP})
Running = Callable[[], list[Any]]  # -> executors.breadcrumbs.Breadcrumb items (key, stage, started)


def _duration(seconds: float) -> str:
    seconds = int(max(0, seconds))
    if seconds >= 3600:
        return f"{seconds // 3600}h{seconds % 3600 // 60:02d}m"
    return f"{seconds // 60}m{seconds % 60:02d}s" if seconds >= 60 else f"{seconds}s"


def _reason(record: ModelRecord, *, message: bool) -> str:
    """`` [kind op]: message`` for a record with a reason; the message only when asked."""
    reason = record.reason
    if reason is None:
        return ""
    text = f" [{reason.kind.value}{' ' + reason.op if reason.op else ''}]"
    first = reason.message.strip().splitlines()[0] if message and reason.message.strip() else ""
    return text + (f": {first[:120]}" if first else "")


def describe_running(items: list[Any], *, now: float | None = None, limit: int = 2) -> str:
    """``org/a (compile 12s), org/b (starting 3s) +1 more``: what runs now."""
    now = time.time() if now is None else now
    parts = []
    for item in items[:limit]:
        elapsed = f" {_duration(now - item.started)}" if item.started else ""
        parts.append(f"{(item.key or '?').split('::')[0][:40]} ({item.stage or 'starting'}{elapsed})")
    more = f" +{len(items) - limit} more" if len(items) > limit else ""
    return ", ".join(parts) + more


class TerminalBar:
    """Counts outcomes and shows them; ``update`` is called once per finished model."""

    def __init__(self, total: int, *, already_done: int = 0, stream: TextIO | None = None, quiet: bool = False) -> None:
        self.total = total
        self.done = 0
        self.already_done = already_done
        self.counts: Counter[str] = Counter()
        self.stream = stream or sys.stderr
        self.quiet = quiet
        self.live = not quiet and self.stream.isatty()
        self.started = time.monotonic()
        self.last_printed = self.started
        self.running: Running | None = None
        self._last_model = ""
        self._drawn = 0.0  # when the bar was last drawn
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._ticker: threading.Thread | None = None

    def say(self, text: str) -> None:
        """A step as it starts (``starting Ray ...``): its own line, above the bar."""
        if not self.quiet:
            self._line(text)

    def watch(self, running: Running) -> None:
        """Redraw the bar every second with what ``running()`` says (a heartbeat off a TTY)."""
        self.running = running
        if self.quiet or self._ticker is not None:
            return
        self._ticker = threading.Thread(target=self._tick, name="progress", daemon=True)
        self._ticker.start()

    def update(self, record: ModelRecord) -> None:
        """Account for one finished model and show it."""
        self.done += 1
        self.counts[record.status.value] += 1
        if self.quiet:
            return
        reused = f" (reused from {record.reused_from})" if record.reused_from else ""
        if self.live:
            self._last_model = record.model_id
            if record.status not in QUIET_STATUSES:  # a failure is named as it happens (then the bar)
                self._line(f"{record.status.value:<7} {record.model_id}{_reason(record, message=True)}{reused}")
            elif not record.reused_from or time.monotonic() - self._drawn >= COPY_REDRAW_S:
                self.redraw()
            return
        self._line(
            f"[{self.done}/{self.total}] {record.status.value:<7} {record.model_id}"
            f"{' (' + record.architecture + ')' if record.architecture else ''} {record.seconds:.1f}s"
            f"{_reason(record, message=record.status not in QUIET_STATUSES)}{reused}"
        )

    def redraw(self) -> None:
        """Draw the bar (terminal only): counts, ETA, and the running models or the last one."""
        if not self.live:
            return
        width = 24
        frac = self.done / self.total if self.total else 1.0
        bar = "#" * int(frac * width) + "-" * (width - int(frac * width))
        elapsed = time.monotonic() - self.started
        eta = f"ETA {_duration(elapsed / self.done * (self.total - self.done))}" if self.done else f"{_duration(elapsed)}"
        tally = " ".join(f"{k} {v}" for k, v in sorted(self.counts.items()))
        now = describe_running(self._running())
        line = f"\r[{bar}] {self.done}/{self.total} {tally} | {eta} | {now or self._last_model[:40]}"
        with self._lock:
            self.stream.write(line.ljust(110)[:200])
            self.stream.flush()
            self._drawn = time.monotonic()

    def _running(self) -> list[Any]:
        if self.running is None:
            return []
        try:
            return list(self.running())
        except Exception:  # noqa: BLE001 - a display must never end a sweep
            return []

    def _line(self, text: str) -> None:
        with self._lock:
            self.stream.write(("\r\033[K" if self.live else "") + text + "\n")
            self.stream.flush()
            self.last_printed = time.monotonic()
        if self.live:
            self.redraw()

    def _tick(self) -> None:
        while not self._stop.wait(REDRAW_S):
            if self.live:
                self.redraw()
            elif time.monotonic() - self.last_printed >= HEARTBEAT_S:
                items = self._running()
                if items:
                    self._line(f"... {self.done}/{self.total} done; running {describe_running(items, limit=4)}")

    def close(self, *, failed: bool = False) -> None:
        """Stop redrawing, end the live line and print the tally (none when the sweep
        ``failed`` before any record: the error says what happened, not ``done: 0``)."""
        self._stop.set()
        if self._ticker is not None:
            self._ticker.join(2.0)
        if self.quiet:
            return
        self.redraw()  # the final count (copies may have skipped the last redraws)
        with self._lock:
            if self.live:
                self.stream.write("\n")
            if failed and not self.done:
                self.stream.flush()
                return
            tally = ", ".join(f"{v} {k}" for k, v in sorted(self.counts.items())) or "nothing new"
            resumed = f" ({self.already_done} already recorded)" if self.already_done else ""
            self.stream.write(f"done: {self.done} models in {_duration(time.monotonic() - self.started)}: {tally}{resumed}\n")
            self.stream.flush()
