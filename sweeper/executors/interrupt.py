"""SIGTERM ends a sweep the way Ctrl-C does: as ``KeyboardInterrupt`` in the main thread.

Python's default SIGTERM action kills the process at once, skipping every ``finally``:
``sweep.json`` would keep no end time and worker temp folders would stay behind. Raised as
``KeyboardInterrupt`` instead, the driver's clean-up runs and the CLI prints the resume
line. Libraries that install their own SIGTERM handler (``ray.init`` does) get it taken
back with ``reclaim()``.
"""

from __future__ import annotations

import contextlib
import signal
import threading
from collections.abc import Iterator
from types import FrameType
from typing import Any

_active = False


def _on_term(signum: int, frame: FrameType | None) -> None:
    raise KeyboardInterrupt(f"signal {signum}")


@contextlib.contextmanager
def terminate_as_interrupt() -> Iterator[None]:
    """Within the block (main thread only), SIGTERM raises ``KeyboardInterrupt``."""
    global _active
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous: Any = signal.signal(signal.SIGTERM, _on_term)
    _active = True
    try:
        yield
    finally:
        _active = False
        signal.signal(signal.SIGTERM, previous)


def reclaim() -> None:
    """Put the SIGTERM handler back after a library replaced it (no-op outside the CLI)."""
    if _active and threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGTERM, _on_term)
