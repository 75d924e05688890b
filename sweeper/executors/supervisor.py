"""The Ray actor class, kept free of Ray: ``ray.py`` wraps it with ``ray.remote``.

A ``Supervisor`` owns one ``WorkerSlot`` on its node, so every model failure becomes a
record next to the worker and the actor itself survives it.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING

from sweeper.executors.base import Check, CheckFn
from sweeper.executors.child import memory_limit_mb
from sweeper.executors.process import threads_per_worker
from sweeper.executors.slot import WorkerSlot
from sweeper.records import ModelRecord, ModelRef

WORKDIR_PREFIX = "sweeper-ray-"
# How long ``ready`` waits for the worker process (its imports); past it, models still go
# to the worker and its start-up counts against the first one.
READY_WAIT_S = 120.0

if TYPE_CHECKING:
    from sweeper.settings.config import SweepConfig


class Supervisor:
    """Ray actor: runs chunks of models in its own worker process, returns their records."""

    def __init__(self, cfg: SweepConfig, check: Check | CheckFn | bytes, workers_per_node: int, tag: str = "") -> None:
        # check: pickled by the driver (bytes) so this actor never unpickles it: that would
        # import torch and transformers here only for the worker process to import them again.
        # The driver's tag in the name lets it remove folders of actors it had to kill; the
        # pid lets a driver on the same node find the worker's progress file.
        self.workdir = Path(tempfile.mkdtemp(prefix=f"{WORKDIR_PREFIX}{tag}-{os.getpid()}-"))
        limit = memory_limit_mb(cfg, workers_per_node)
        self.slot = WorkerSlot(cfg, check, workdir=self.workdir, num_threads=threads_per_worker(cfg), memory_limit_mb=limit)
        # The worker imports torch while the driver learns this actor is ready and sends work.
        self.slot.start()

    def ready(self) -> int:
        """The actor's pid, once it and its worker process are up (creation errors, and a
        check the worker cannot load, surface here)."""
        self.slot.await_ready(READY_WAIT_S)
        return os.getpid()

    def run(self, refs: list[ModelRef]) -> list[ModelRecord]:
        """One record per ref, in order."""
        return [self.slot.run(ref) for ref in refs]

    def shutdown(self) -> None:
        """Stop the worker process and remove its files."""
        self.slot.close()
        shutil.rmtree(self.workdir, ignore_errors=True)
