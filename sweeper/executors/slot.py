"""One worker process seen from its parent: submit a model, notice its record or its death.

``WorkerSlot`` owns at most one live worker (``worker.main``) and one model at a time.
It turns what can go wrong into exactly one record for that model: a death by signal or
exit is ``crash`` (SIGKILL that the slot did not send: ``oom``, the kernel's OOM killer),
running past ``--timeout`` is ``timeout``, growing past its ``memory_limit_mb`` (what its executor
computed from ``--memory-limit-mb`` or the node's memory) is ``oom``.
Each failure record says the stage and last op the worker published (``breadcrumbs``) and the
Python frame faulthandler printed. The worker is recycled after a failure, after a leak,
when it grows past ``RECYCLE_RSS_MB``, and every ``cfg.execution.worker_max_models`` models.

The process executor drives several slots from the driver; each Ray actor drives one.
"""

from __future__ import annotations

import contextlib
import dataclasses
import pickle
import signal
import socket
import time
from dataclasses import dataclass
from multiprocessing.connection import Connection, wait
from pathlib import Path
from typing import Any

import psutil

from sweeper.devices.base import HELPER_PROCESS_MARK
from sweeper.executors import breadcrumbs, controls
from sweeper.executors.base import Check, CheckFn, failure_record
from sweeper.executors.child import MIB, Child, fault_frame, log_tail, signal_name
from sweeper.records import (
    ModelRecord,
    ModelRef,
    ReasonKind,
    Stage,
    StageResult,
    Status,
)

STARTUP_GRACE_S = 120.0  # a fresh worker imports torch + transformers before its first model
MEMORY_POLL_S = 0.2
CHILDREN_SCAN_S = 2.0
RECYCLE_RSS_MB = 3072  # past this after a model, start the next one in a fresh process


@dataclass
class Job:
    ref: ModelRef
    submitted: float
    started: float | None = None
    # Set while the job is the CPU control of this record (a crash, timeout or oom of the device run).
    control_of: ModelRecord | None = None
    # What the model had earned before a stage with a limit of its own (the worker's
    # ``breadcrumbs.earned``): a worker killed in that stage keeps these verdicts.
    earned: ModelRecord | None = None


def _device_helper(proc: psutil.Process) -> bool:
    """A device's long-lived helper (``HELPER_PROCESS_MARK``: trnsim's lowering server),
    whose memory is bounded by its own limits and is not the model's."""
    try:
        return HELPER_PROCESS_MARK in proc.cmdline()
    except psutil.Error:
        return False


def _unique_bytes(proc: psutil.Process) -> int:
    """Memory only ``proc`` holds (USS), or its RSS where the system cannot say."""
    try:
        return int(proc.memory_full_info().uss)
    except (psutil.AccessDenied, AttributeError):
        return int(proc.memory_info().rss)


class WorkerSlot:
    """A reusable worker process running one model at a time, with timeout and memory guard."""

    def __init__(
        self, cfg: Any, check: Check | CheckFn | bytes, *, workdir: Path, index: int = 0, num_threads: int = 1,
        memory_limit_mb: int | None = None,
    ) -> None:
        self.cfg = cfg
        self.memory_limit_mb = memory_limit_mb
        # Already pickled (bytes) when it comes from a Ray actor, which must not import the check's modules.
        self.check_blob = check if isinstance(check, bytes) else pickle.dumps(check)
        self.progress_path = str(workdir / f"worker-{index}.progress")
        self.fault_path = str(workdir / f"worker-{index}.fault")
        self.log_path = str(workdir / f"worker-{index}.log")
        self.num_threads = max(1, num_threads)
        self.proc: Any = None
        self.conn: Any = None
        self.ready = False
        self.job: Job | None = None
        self.models_done = 0
        self.started_workers = 0
        self._next_memory_check = 0.0
        self._next_growth_check = 0.0
        self._ps: psutil.Process | None = None
        self._kids: list[psutil.Process] = []
        self._next_kids_scan = 0.0

    @property
    def busy(self) -> bool:
        return self.job is not None

    def _start(self) -> None:
        Path(self.fault_path).write_text("")  # a stale dump must not describe this worker
        ours, theirs = socket.socketpair()
        try:
            proc = Child(theirs.fileno(), self.num_threads, self.log_path, memory_limit_mb=self.memory_limit_mb)
        finally:
            theirs.close()
        conn = Connection(ours.detach())
        conn.send((self.cfg, self.check_blob, self.progress_path, self.fault_path, self.num_threads))
        self.proc, self.conn, self.ready, self.models_done = proc, conn, False, 0
        self.started_workers += 1

    def start(self) -> None:
        """Start the worker process now, so its imports overlap whatever comes before the first model."""
        if self.proc is None:
            self._start()

    def await_ready(self, timeout: float) -> None:
        """Wait until a worker started ahead of time has loaded the check. Raise when it
        exited with an error first (a check its environment cannot import), so whoever
        started it learns at once; a worker killed by a signal (memory) is left to the
        first model's record, like any worker that dies."""
        deadline = time.monotonic() + timeout
        while self.proc is not None and not self.ready and time.monotonic() < deadline:
            with contextlib.suppress(EOFError, OSError):
                if self.conn.poll(0.2) and self.conn.recv()[0] == "ready":
                    self.ready = True
            if not self.ready and not self.proc.is_alive():
                code = self.proc.exitcode
                if code is not None and code > 0:
                    last = (log_tail(self.log_path).strip().splitlines() or ["no output"])[-1]
                    self._reap()
                    raise RuntimeError(f"the worker process exited with {code} before it was ready: {last}")
                return

    def submit(self, ref: ModelRef) -> None:
        """Hand ``ref`` to the worker (started first if there is none, or again if the one
        started ahead of time died while idle: that death belongs to no model)."""
        if self.proc is not None and not self.proc.is_alive():
            self._reap()
        if self.proc is None:
            self._start()
        self.conn.send(("run", ref))
        now = time.monotonic()
        self.job = Job(ref, submitted=now, started=now if self.ready else None)

    def current(self) -> breadcrumbs.Breadcrumb | None:
        """What the worker is doing now (model, stage, since when), or None when idle."""
        job = self.job
        if job is None:
            return None
        found = breadcrumbs.read(self.progress_path)
        if found.key == job.ref.key:
            return found
        since = time.time() - (time.monotonic() - job.submitted)
        return breadcrumbs.Breadcrumb(key=job.ref.key, stage=None if self.ready else "starting worker", started=since)

    def waitables(self) -> list[Any]:
        """What ``multiprocessing.connection.wait`` should watch for this slot."""
        return [self.conn] if self.conn is not None else []  # EOF wakes it when the worker dies

    def run(self, ref: ModelRef) -> ModelRecord:
        """Run one model to its record (blocking)."""
        self.submit(ref)
        while True:
            wait(self.waitables(), timeout=MEMORY_POLL_S)
            record = self.poll()
            if record is not None:
                return record

    def poll(self) -> ModelRecord | None:
        """The current model's record once it exists (returned, crashed, timed out, over memory)."""
        job = self.job
        if job is None:
            return None
        with contextlib.suppress(EOFError, OSError):
            while self.conn.poll():
                msg = self.conn.recv()
                if msg[0] == "ready":
                    self.ready = True
                    job.started = job.started or time.monotonic()
                elif msg[0] == "done":
                    return self._finish(msg[1], msg[2])
                elif msg[0] == "controlled":
                    return self._controlled(msg[1], msg[2])
                elif msg[0] == "earned" and getattr(msg[1], "key", None) == job.ref.key:
                    job.earned = msg[1]
        if not self.proc.is_alive():
            return self._fail_dead()
        now = time.monotonic()
        if now > self._deadline(job):
            return self._failure(Status.TIMEOUT, ReasonKind.TIMEOUT, f"exceeded --timeout {self.cfg.execution.timeout:g}s", kill=True)
        if self.memory_limit_mb and now >= self._next_memory_check:
            self._next_memory_check = now + MEMORY_POLL_S
            rss = self._rss_mb()
            if rss > self.memory_limit_mb:
                how = f"exceeded --memory-limit-mb {self.memory_limit_mb} (rss {rss:.0f} MiB)"
                return self._failure(Status.CRASH, ReasonKind.OOM, how, kill=True)
        return None

    def _deadline(self, job: Job) -> float:
        if job.started is None:
            return job.submitted + self.cfg.execution.timeout + STARTUP_GRACE_S
        return job.started + self.cfg.execution.timeout

    def _rss_mb(self, *, children: bool = True) -> float:
        """The worker's resident memory, with what it started (compile workers) unless told not."""
        try:
            proc = self._process()
            procs = [proc, *self._children(proc)] if children else [proc]
        except psutil.Error:
            return 0.0
        total = 0
        for p in procs:
            with contextlib.suppress(psutil.Error):  # a compile worker may have just ended
                # A child forked by the worker (a lowering, a blame probe) shares the worker's
                # pages until it writes them: its RSS counts them twice, its USS does not.
                total += p.memory_info().rss if p is procs[0] else _unique_bytes(p)
        return total / MIB

    def _process(self) -> psutil.Process:
        if self._ps is None or self._ps.pid != self.proc.pid:
            self._ps, self._kids, self._next_kids_scan = psutil.Process(self.proc.pid), [], 0.0
        return self._ps

    def _children(self, proc: psutil.Process) -> list[psutil.Process]:
        """The worker's descendants, rescanned every ``CHILDREN_SCAN_S``: finding them reads
        every process on the machine, too much to do five times a second per worker."""
        now = time.monotonic()
        if now >= self._next_kids_scan:
            self._kids, self._next_kids_scan = [p for p in proc.children(recursive=True) if not _device_helper(p)], \
                now + CHILDREN_SCAN_S
        return self._kids

    def _grown(self) -> bool:
        """Past the recycle threshold? Looked at most once a second: scanning /proc per model
        would cost more than a fast model itself."""
        now = time.monotonic()
        if now < self._next_growth_check:
            return False
        self._next_growth_check = now + 1.0
        limit = min(RECYCLE_RSS_MB, self.memory_limit_mb or RECYCLE_RSS_MB)
        return self._rss_mb(children=False) > limit

    def _finish(self, record: ModelRecord, leaked: list[str]) -> ModelRecord:
        self.job = None
        self.models_done += 1
        if leaked:
            record.notes["worker_recycled"] = "leaked patches: " + ", ".join(leaked[:5])
        if leaked or self.models_done >= max(1, self.cfg.execution.worker_max_models) or self._grown():
            self.stop()
        return record

    def _controlled(self, verdict: dict[str, Any] | None, leaked: list[str]) -> ModelRecord:
        assert self.job is not None and self.job.control_of is not None
        record = controls.judge(self.job.control_of, verdict)
        return self._finish(record, leaked)

    def _fail_dead(self) -> ModelRecord | None:
        self.proc.join(1.0)
        code = self.proc.exitcode
        if code is not None and code < 0:
            sig = signal_name(-code)
            if -code == signal.SIGKILL:  # not sent by this slot: the kernel's OOM killer, most likely
                return self._failure(Status.CRASH, ReasonKind.OOM, f"was killed by {sig} (out of memory, most likely)")
            return self._failure(Status.CRASH, ReasonKind.CRASH, f"died of {sig}")
        return self._failure(Status.CRASH, ReasonKind.CRASH, f"exited with code {code}")

    def _failure(self, status: Status, kind: ReasonKind, how: str, *, kill: bool = False) -> ModelRecord | None:
        """The record of a worker that died, hung or grew past its memory; ``None`` while
        the CPU control of a device stage's failure runs (``controls``), its record to come."""
        assert self.job is not None
        ref, control_of, earned = self.job.ref, self.job.control_of, self.job.earned
        record = self._failure_record(status, kind, how, kill=kill)
        if earned is not None and control_of is None:
            kept = _keep_earned(record, earned)
            if kept is not None:
                return kept
        if control_of is not None:  # the control itself crashed, hung or ran out: under the same limits
            return controls.judge(control_of, controls.verdict_of_failure(record, control_of))
        stage = controls.stage_to_control(record, self.cfg)
        if stage is None:
            return record
        try:
            self._start()
            self.conn.send(("control", ref, stage))
        except OSError:  # no fresh worker for the control: the failure stays unproven
            self.kill()
            return controls.judge(record, None)
        self.job = Job(ref, submitted=time.monotonic(), control_of=record)
        return None

    def _failure_record(self, status: Status, kind: ReasonKind, how: str, *, kill: bool = False) -> ModelRecord:
        assert self.job is not None
        job, self.job = self.job, None
        found = breadcrumbs.read(self.progress_path)
        if found.key != job.ref.key:  # died before publishing this model
            found = breadcrumbs.Breadcrumb()
        if kill:
            self.kill()
        else:
            self._reap()
        frame = fault_frame(self.fault_path)
        elapsed = time.monotonic() - (job.started or job.submitted)
        message = f"worker {how} {found.describe()}{frame} after {elapsed:.1f}s"
        record = failure_record(
            job.ref, self.cfg, status=status, kind=kind, message=message, stage=found.stage,
        )
        if record.reason is not None and found.op:  # the op it died in names every copy of the blocker
            with_op = dataclasses.replace(record.reason, op=found.op)
            record.blockers = [with_op if b == record.reason else b for b in record.blockers]
            record.reason = with_op
        if found.stage in {s.value for s in Stage}:
            record.stages[found.stage] = StageResult(status=status, seconds=elapsed, reason=record.reason)
        record.seconds = elapsed
        tail = log_tail(self.log_path)
        if tail:  # e.g. "terminate called after throwing an instance of 'c10::Error'"
            record.notes["worker_output"] = tail
        return record

    def kill(self) -> None:
        """SIGKILL the worker and anything it started (compile workers), then forget it."""
        if self.proc is None:
            return
        with contextlib.suppress(psutil.Error):
            for child in psutil.Process(self.proc.pid).children(recursive=True):
                child.kill()
        self.proc.kill()
        self._reap()

    def _reap(self) -> None:
        if self.proc is not None:
            self.proc.join(5.0)
        if self.conn is not None:
            self.conn.close()
        self.proc, self.conn, self.ready = None, None, False

    def stop(self) -> None:
        """End the worker politely (it finishes nothing: only call between models)."""
        if self.proc is None:
            return
        with contextlib.suppress(OSError, ValueError):
            self.conn.send(("stop",))
        self.proc.join(5.0)
        if self.proc.is_alive():
            self.kill()
        else:
            self._reap()

    def close(self) -> None:
        """Stop the worker whatever it is doing."""
        if self.busy:
            self.kill()
        else:
            self.stop()
        self.job = None


def _keep_earned(record: ModelRecord, earned: ModelRecord) -> ModelRecord | None:
    """A worker killed in a stage that runs after ``earned`` was made: the earlier stages
    keep the verdicts they earned. Out of time in a stage with a limit of its own, after
    stages that all passed, the model's record is the one it earned, with that stage a
    timeout (returned); otherwise ``record`` (the failure, kept as the model's) takes the
    earned stages it lacks, and None is returned."""
    stage = record.notes.get("stage") or next(
        (name for name, result in record.stages.items() if result.reason is not None), None)
    for name, result in earned.stages.items():
        if name != stage:
            record.stages.setdefault(name, result)
    record.stages = {name: record.stages[name] for name in [*earned.stages, *record.stages] if name in record.stages}
    if record.status is not Status.TIMEOUT or stage is None or stage in earned.stages or earned.blockers:
        return None
    kept = dataclasses.replace(earned, stages=dict(earned.stages), notes=dict(earned.notes))
    seconds = max(0.0, record.seconds - earned.seconds)
    reason = dataclasses.replace(record.reason, stage=stage, origin=None) if record.reason is not None else None
    kept.stages[stage] = StageResult(status=Status.TIMEOUT, seconds=seconds, reason=reason)
    kept.seconds = record.seconds
    kept.settle()
    kept.notes["stage_timeout"] = (f"the worker was stopped in the {stage} stage by --timeout; the stages before it "
                                   "keep the verdicts they earned")
    if stage == Stage.SHAPES.value:
        kept.shapes = {"verdict": "timeout", "why": "the worker was stopped by --timeout"}
    if "worker_output" in record.notes:
        kept.notes["worker_output"] = record.notes["worker_output"]
    return kept
