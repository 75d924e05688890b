"""Process executor: a pool of worker processes on this machine, one model per worker at a time.

No Ray needed. Each worker is a ``WorkerSlot``: a crash, a timeout (``--timeout`` per
model) or running out of memory costs exactly one record and a fresh worker; workers are
reused between models and recycled every ``--worker-max-models``. Refs are pulled from the
iterable only when a worker is free, so a lazy catalog of any size streams through.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterable, Iterator
from multiprocessing.connection import wait
from pathlib import Path
from typing import TYPE_CHECKING

from sweeper.executors import breadcrumbs
from sweeper.executors.base import Check, CheckFn, OnRecord
from sweeper.executors.child import memory_limit_mb
from sweeper.executors.slot import MEMORY_POLL_S, WorkerSlot
from sweeper.records import ModelRef

if TYPE_CHECKING:
    from sweeper.settings.config import SweepConfig


def default_workers(cfg: SweepConfig) -> int:
    """``--workers``, else as many as this machine's CPUs allow at ``--num-cpus`` each."""
    if cfg.execution.workers:
        return cfg.execution.workers
    return max(1, int((os.cpu_count() or 1) // max(cfg.execution.num_cpus, 1e-9)))


def threads_per_worker(cfg: SweepConfig) -> int:
    """``torch.set_num_threads`` for a worker given ``--num-cpus`` (at least one)."""
    return max(1, int(cfg.execution.num_cpus))


class ProcessExecutor:
    """Runs models in ``--workers`` local worker processes."""

    def __init__(self, cfg: SweepConfig) -> None:
        self.cfg = cfg
        self.workdir = Path(tempfile.mkdtemp(prefix="sweeper-workers-"))
        self.slots: list[WorkerSlot] = []

    def run(self, refs: Iterable[ModelRef], cfg: SweepConfig, *, check: Check | CheckFn, on_record: OnRecord) -> None:
        """Call ``on_record`` once per ref, in completion order."""
        self._close_slots()
        n = default_workers(cfg)
        limit = memory_limit_mb(cfg, n)
        self.slots = [
            WorkerSlot(cfg, check, workdir=self.workdir, index=i, num_threads=threads_per_worker(cfg), memory_limit_mb=limit)
            for i in range(n)
        ]
        pending: Iterator[ModelRef] = iter(refs)
        exhausted = False
        try:
            while True:
                if not exhausted:
                    exhausted = self._fill(pending)
                busy = [s for s in self.slots if s.busy]
                if not busy:
                    return
                wait([w for s in busy for w in s.waitables()], timeout=MEMORY_POLL_S)
                for slot in busy:
                    record = slot.poll()
                    if record is not None:
                        on_record(record)
        finally:
            self._close_slots()

    def _fill(self, pending: Iterator[ModelRef]) -> bool:
        """Give each idle worker its next ref; True once the refs run out."""
        for slot in self.slots:
            if slot.busy:
                continue
            ref = next(pending, None)
            if ref is None:
                return True
            slot.submit(ref)
        return False

    def running(self) -> list[breadcrumbs.Breadcrumb]:
        """The models running now, with their stage and start (for the progress bar)."""
        return [p for p in (slot.current() for slot in list(self.slots)) if p is not None]

    def _close_slots(self) -> None:
        for slot in self.slots:
            slot.close()
        self.slots = []

    def close(self) -> None:
        """Stop every worker and remove their progress files."""
        self._close_slots()
        shutil.rmtree(self.workdir, ignore_errors=True)
