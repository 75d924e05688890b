"""Where trnsim's compile time goes: wall and CPU seconds per phase, summed per process.

Phases nest (the AOT phase contains the forward graph's lowering); each phase is charged
its own time only, so the phases of one compile add up to the time spent in the backend.
The CPU clock is the calling thread's: on shared cores the wall clock also measures the
neighbours, the CPU clock only this work. Read with ``snapshot``, start over with ``reset``
(``benchmarks/compile_profile.py`` prints them).
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass


@dataclass
class PhaseTime:
    """Seconds charged to one phase (its nested phases excluded) and how often it ran."""

    wall: float = 0.0
    cpu: float = 0.0
    count: int = 0


_TOTALS: dict[str, PhaseTime] = {}
_LOCK = threading.Lock()
_STACK = threading.local()  # per thread: [wall, cpu] already charged to nested phases


def add(name: str, wall: float, cpu: float, *, count: int = 1, other_process: bool = False) -> None:
    """Charge ``wall`` and ``cpu`` seconds to phase ``name`` and take them off the
    enclosing phase, so nothing is counted twice (only the wall time when the work ran in
    another process: this thread's CPU clock never saw it)."""
    with _LOCK:
        entry = _TOTALS.setdefault(name, PhaseTime())
        entry.wall += wall
        entry.cpu += cpu
        entry.count += count
    stack = getattr(_STACK, "frames", None)
    if stack:
        stack[-1][0] += wall
        stack[-1][1] += 0.0 if other_process else cpu


@contextlib.contextmanager
def phase(name: str) -> Iterator[None]:
    """Time the block as phase ``name``, less what nested phases took."""
    frames = _STACK.__dict__.setdefault("frames", [])
    frames.append([0.0, 0.0])
    wall0, cpu0 = time.perf_counter(), time.thread_time()
    try:
        yield
    finally:
        wall, cpu = time.perf_counter() - wall0, time.thread_time() - cpu0
        nested_wall, nested_cpu = frames.pop()
        with _LOCK:
            entry = _TOTALS.setdefault(name, PhaseTime())
            entry.wall += wall - nested_wall
            entry.cpu += cpu - nested_cpu
            entry.count += 1
        if frames:
            frames[-1][0] += wall
            frames[-1][1] += cpu


def snapshot() -> dict[str, PhaseTime]:
    """A copy of the totals so far, by phase name."""
    with _LOCK:
        return {name: PhaseTime(t.wall, t.cpu, t.count) for name, t in _TOTALS.items()}


def reset() -> None:
    """Start the totals over."""
    with _LOCK:
        _TOTALS.clear()
