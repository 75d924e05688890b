"""Progress on the terminal: a live bar on a TTY, one plain line per model otherwise."""

from __future__ import annotations

import sys
import time
from collections import Counter
from typing import TextIO

from sweeper.records import ModelRecord


def _duration(seconds: float) -> str:
    seconds = int(max(0, seconds))
    if seconds >= 3600:
        return f"{seconds // 3600}h{seconds % 3600 // 60:02d}m"
    return f"{seconds // 60}m{seconds % 60:02d}s" if seconds >= 60 else f"{seconds}s"


class Progress:
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

    def update(self, record: ModelRecord) -> None:
        """Account for one finished model and redraw."""
        self.done += 1
        self.counts[record.status.value] += 1
        if self.quiet:
            return
        if self.live:
            self._draw(record)
        else:
            reason = f" [{record.reason.kind.value}{' ' + record.reason.op if record.reason and record.reason.op else ''}]" if record.reason else ""
            self.stream.write(
                f"[{self.done}/{self.total}] {record.status.value:<7} {record.model_id}"
                f"{' (' + record.architecture + ')' if record.architecture else ''} {record.seconds:.1f}s{reason}\n"
            )
            self.stream.flush()

    def _draw(self, record: ModelRecord) -> None:
        width = 24
        frac = self.done / self.total if self.total else 1.0
        bar = "#" * int(frac * width) + "-" * (width - int(frac * width))
        elapsed = time.monotonic() - self.started
        eta = elapsed / self.done * (self.total - self.done) if self.done else 0.0
        tally = " ".join(f"{k} {v}" for k, v in sorted(self.counts.items()))
        line = f"\r[{bar}] {self.done}/{self.total} {tally} | ETA {_duration(eta)} | {record.model_id[:40]}"
        self.stream.write(line.ljust(110)[:160])
        self.stream.flush()

    def close(self) -> None:
        """End the live line and print the tally."""
        if self.quiet:
            return
        if self.live:
            self.stream.write("\n")
        tally = ", ".join(f"{v} {k}" for k, v in sorted(self.counts.items())) or "nothing new"
        resumed = f" ({self.already_done} already recorded)" if self.already_done else ""
        self.stream.write(f"done: {self.done} models in {_duration(time.monotonic() - self.started)}: {tally}{resumed}\n")
        self.stream.flush()
