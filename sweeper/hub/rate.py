"""One request rate for every process on a node that talks to one Hub endpoint.

The listing in the driver and the config/weights fetches in every worker process draw from
the same budget: a token bucket kept in a small file under the temporary folder, keyed by
the endpoint, and updated under an exclusive ``flock``. Each request reserves the next free
slot (the generic cell rate algorithm: the file holds the time at which the bucket is
empty again) and sleeps until it, so waiting processes queue in order and nobody polls.
``pause`` pushes every process's next slot out, e.g. after a ``429`` with ``Retry-After``.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

try:
    import fcntl
except ImportError:  # pragma: no cover - not POSIX: the bucket is per process
    fcntl = None  # type: ignore[assignment]

# Requests allowed back to back before the rate applies (a page of listing, a model's
# HEAD + GET + info) so that short bursts are not stretched out needlessly.
DEFAULT_BURST = 10
# A stored slot further ahead than this is a clock jump or a stale file: start afresh.
_STALE_S = 3600.0
_LOCAL = threading.Lock()


def bucket_path(endpoint: str, folder: Path | None = None) -> Path:
    """The shared state file of ``endpoint`` (``$SWEEPER_RATE_DIR`` or the temp folder)."""
    base = folder or Path(os.environ.get("SWEEPER_RATE_DIR") or tempfile.gettempdir())
    digest = hashlib.sha256(endpoint.rstrip("/").encode()).hexdigest()[:16]
    return base / f"sweeper-hub-rate-{digest}.bucket"


class NodeRateLimiter:
    """At most ``rpm`` requests a minute to one endpoint, across the node's processes."""

    def __init__(
        self,
        rpm: float,
        path: Path,
        *,
        burst: int = DEFAULT_BURST,
        clock: Callable[[], float] = time.time,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        if rpm <= 0:
            raise ValueError(f"requests per minute must be positive, got {rpm}")
        self.interval = 60.0 / rpm
        self.tolerance = max(0, burst - 1) * self.interval
        self.path = path
        self.clock = clock
        self.sleep = sleep
        self.waited = 0.0  # seconds this process slept for the rate (for tests and stats)

    def acquire(self) -> float:
        """Take one request slot, sleeping until it comes; returns the seconds slept."""
        with self._locked() as state:
            now = self.clock()
            empty_at = max(state.read(now), now)
            wait = max(0.0, empty_at - self.tolerance - now)
            state.write(empty_at + self.interval)
        if wait > 0:
            self.sleep(wait)
            self.waited += wait
        return wait

    def pause(self, seconds: float) -> None:
        """Hold every process's next request back until ``seconds`` from now."""
        with self._locked() as state:
            now = self.clock()
            # Past the tolerance, so that no burst slips through straight after the pause.
            state.write(max(state.read(now), now + seconds + self.tolerance))

    @contextlib.contextmanager
    def _locked(self) -> Iterator[_State]:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with _LOCAL, open(self.path, "a+", encoding="ascii") as handle:
            if fcntl is not None:
                fcntl.flock(handle.fileno(), fcntl.LOCK_EX)
            try:
                yield _State(handle)
            finally:
                if fcntl is not None:
                    fcntl.flock(handle.fileno(), fcntl.LOCK_UN)


class _State:
    """The bucket file: one number, the time at which the bucket is empty again."""

    def __init__(self, handle: object) -> None:
        self.handle = handle

    def read(self, now: float) -> float:
        self.handle.seek(0)  # type: ignore[attr-defined]
        try:
            value = float(self.handle.read().strip() or 0.0)  # type: ignore[attr-defined]
        except ValueError:
            return now  # a torn or foreign file: start afresh
        return now if value - now > _STALE_S else value

    def write(self, value: float) -> None:
        self.handle.seek(0)  # type: ignore[attr-defined]
        self.handle.truncate()  # type: ignore[attr-defined]
        self.handle.write(f"{value:.6f}")  # type: ignore[attr-defined]
        self.handle.flush()  # type: ignore[attr-defined]
