"""Ray executor (the default): local Ray started in-process, or a cluster with ``--address``.

With ``ray_connect`` (how the driver starts or joins Ray), the only module that imports
Ray. Each Ray actor is a ``Supervisor`` that owns one ``WorkerSlot``: the model runs in
the slot's worker process on the actor's node, so a segfault, abort, hang or runaway
allocation costs one record (made next to the worker, with its stage and last op) and
never the Ray worker. Any Ray error reaching the driver is
therefore the infrastructure's (lost worker, node, object): those calls are retried up to
``--retries``; a model's own failure comes back as a record and is never retried.

Submission streams through a ``Window``: at most ``DEPTH`` calls per actor and
``max_in_flight`` refs at once, so the driver's memory stays flat over any catalog size.
Records go to ``on_record`` in the driver only; tasks return plain records.
"""

from __future__ import annotations

import glob
import os
import pickle
import shutil
import sys
import tempfile
import time
import uuid
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import ray
from ray.exceptions import OutOfMemoryError, RayError, RayTaskError

from sweeper.executors import breadcrumbs
from sweeper.executors.base import Check, CheckFn, OnRecord, as_check, failure_record
from sweeper.executors.interrupt import reclaim
from sweeper.executors.ray_connect import connect
from sweeper.executors.supervisor import WORKDIR_PREFIX, Supervisor
from sweeper.executors.window import DEPTH, Call, Window
from sweeper.records import ModelRecord, ModelRef, ReasonKind, Status
from sweeper.settings.errors import UsageError

if TYPE_CHECKING:
    from sweeper.devices.spec import DeviceSpec
    from sweeper.settings.config import SweepConfig

POLL_S = 0.5
BACKSTOP_GRACE_S = 180.0  # past every per-model timeout plus a worker start: the actor is wedged
READY_TIMEOUT_S = 600.0  # an autoscaling cluster may need minutes to add a node
OOM_BACKOFF_S = (0.5, 10.0)  # first and longest pause after Ray's memory monitor killed a worker
OOM_STARTS_PER_MODEL = 3  # workers killed while starting, in a row, before the next model is an oom


def describe_cluster(address: str) -> str:
    """``ray: attached to ADDRESS (gcs HOST:PORT): N nodes, C CPUs, G GPUs`` for the sweep's log."""
    alive = [node for node in ray.nodes() if node.get("Alive")]
    res = ray.cluster_resources()
    gcs = ""
    try:
        gcs = ray.get_runtime_context().gcs_address
    except Exception:  # noqa: BLE001 - ray:// clients have no GCS address of their own
        gcs = ""
    where = f"{address} (gcs {gcs})" if gcs and gcs != address else address
    return f"ray: attached to {where}: {len(alive)} node(s), {res.get('CPU', 0):g} CPUs, {res.get('GPU', 0):g} GPUs"


def gpus_per_model(cfg: SweepConfig, spec: DeviceSpec | None) -> float:
    """``--num-gpus``, else one GPU per model when the device needs one (``DeviceSpec.gpus``;
    a check without a device spec, such as a test's function, needs none)."""
    if cfg.execution.num_gpus:
        return cfg.execution.num_gpus
    return 1.0 if spec is not None and spec.gpus else 0.0


def cluster_workers(cfg: SweepConfig, spec: DeviceSpec | None) -> int:
    """``--workers``, else as many actors as the cluster's CPUs (and GPUs) allow."""
    if cfg.execution.workers:
        return cfg.execution.workers
    res = ray.cluster_resources()
    n = int(res.get("CPU", 1) // max(cfg.execution.num_cpus, 1e-9))
    gpus = gpus_per_model(cfg, spec)
    if gpus:
        if not res.get("GPU"):
            raise UsageError(f"device {cfg.device.spec} needs {gpus:g} GPU per model but the Ray cluster has none")
        n = min(n, int(res["GPU"] // gpus))
    return max(1, n)


class RayExecutor:
    """Maps ``check`` over refs on Ray actors with a bounded in-flight window."""

    def __init__(self, cfg: SweepConfig) -> None:
        self.cfg = cfg
        self.spec: DeviceSpec | None = None
        self.started_ray = False
        self.actors: list[Any] = []
        self.queues: list[list[Call]] = []
        self.starting: dict[int, Any] = {}  # actor index -> its ready() call, until it answers
        self.actor_starts = 0
        self.failed_starts = 0
        self.pids: dict[int, int] = {}  # actor index -> its pid, once it answered ready()
        self.tag = f"{os.getpid()}-{uuid.uuid4().hex[:8]}"
        self.backoff_s = 0.0
        self.oom_starts = 0  # workers killed for memory while starting, since the last good call

    def run(self, refs: Iterable[ModelRef], cfg: SweepConfig, *, check: Check | CheckFn, on_record: OnRecord) -> None:
        """Call ``on_record`` once per ref, in completion order."""
        self.cfg = cfg
        self.spec = getattr(as_check(check, cfg), "spec", None)
        self.started_ray = connect(cfg) or self.started_ray
        reclaim()  # ray.init installs its own SIGTERM handler; the sweep must still close cleanly
        address = cfg.execution.address or os.environ.get("RAY_ADDRESS", "").strip()
        if address:
            print(describe_cluster(address), file=sys.stderr)
        n = cluster_workers(cfg, self.spec)
        self._remote = ray.remote(Supervisor).options(
            num_cpus=cfg.execution.num_cpus, num_gpus=gpus_per_model(cfg, self.spec), max_restarts=0, max_task_retries=0,
            memory=cfg.execution.memory_limit_mb * 1024 * 1024 if cfg.execution.memory_limit_mb else None,
        )
        try:  # pickled here, once: actors hand it on without importing what it needs
            blob = pickle.dumps(check)
        except (pickle.PicklingError, AttributeError, TypeError) as exc:
            raise UsageError(f"Ray workers could not start: the check cannot be sent to them: {exc}") from None
        self._args = (cfg, blob, max(1, int((os.cpu_count() or 1) // max(cfg.execution.num_cpus, 1e-9))), self.tag)
        self._kill_actors()
        self.queues = [[] for _ in range(n)]
        self.actors = [self._new_actor(i) for i in range(n)]
        self._await_ready()
        window = Window(refs, workers=n, max_in_flight=cfg.execution.max_in_flight, retries=cfg.execution.retries)
        pending: dict[Any, Call] = {}
        while True:
            self._refresh_ready()
            self._starved_by_memory(window, on_record)
            self._fill(window, pending)
            if not pending:
                if window.drained:
                    return
                self._await_ready()  # every actor is being replaced: wait for one
                continue
            # Also wake when an actor comes up, so it gets work at once.
            ready, _ = ray.wait([*pending, *self.starting.values()], num_returns=1, timeout=POLL_S)
            for handle in ready:
                if handle in pending:
                    self._collect(pending.pop(handle), window, pending, on_record)
            self._check_backstops(window, pending, on_record)

    def _await_ready(self) -> None:
        """Wait for one actor to come up; fail fast, in one line, when none can.

        Only one: on an autoscaling cluster the rest may wait for nodes, and models start
        on the actors that are up (``_fill`` skips the others).
        """
        if not self.starting:
            return
        first, _ = ray.wait(list(self.starting.values()), num_returns=1, timeout=READY_TIMEOUT_S)
        if not first:
            raise UsageError(
                f"no Ray worker started within {READY_TIMEOUT_S:.0f}s: the cluster cannot place "
                f"{self.cfg.execution.num_cpus:g} CPU / {gpus_per_model(self.cfg, self.spec):g} GPU per model (see --num-cpus, --num-gpus)"
            )
        self._refresh_ready()

    def _refresh_ready(self) -> None:
        """Move actors that answered ``ready`` into service; replace ones that failed to start."""
        if not self.starting:
            return
        done, _ = ray.wait(list(self.starting.values()), num_returns=len(self.starting), timeout=0)
        for i, handle in list(self.starting.items()):
            if handle not in done:
                continue
            del self.starting[i]
            try:
                self.pids[i] = ray.get(handle)
            except RayError as exc:  # e.g. the check function does not import on that node
                if _is_oom(exc):  # the node is short of memory now: wait, never give up the sweep
                    self.oom_starts += 1
                    self._back_off()
                    self.actors[i] = self._new_actor(i)
                    continue
                self.failed_starts += 1
                if self.failed_starts > 2 * len(self.actors):
                    raise UsageError(f"Ray workers could not start: {_first_line(exc)}") from exc
                self.actors[i] = self._new_actor(i)

    def running(self) -> list[breadcrumbs.Breadcrumb]:
        """The models running now (for the progress bar): stage and start from the worker's
        progress file when it is on this machine, else the running call's first model."""
        out = []
        for i, queue in enumerate(list(self.queues)):
            call = queue[0] if queue else None
            if call is None or call.started is None:
                continue
            found = breadcrumbs.read(local_progress_file(self.pids.get(i)))
            if found.key not in {ref.key for ref in call.refs}:
                since = time.time() - (time.monotonic() - call.started)
                found = breadcrumbs.Breadcrumb(key=call.refs[0].key, started=since)
            out.append(found)
        return out

    def _new_actor(self, i: int) -> Any:
        self.pids.pop(i, None)
        self.actor_starts += 1
        actor = self._remote.remote(*self._args)
        self.starting[i] = actor.ready.remote()
        return actor

    def _fill(self, window: Window, pending: dict[Any, Call]) -> None:
        for i, actor in enumerate(self.actors):
            while i not in self.starting and len(self.queues[i]) < DEPTH and not window.drained:
                chunk = window.take()
                if not chunk:
                    return
                now = time.monotonic()
                call = Call(chunk, worker=i, submitted=now, started=None if self.queues[i] else now)
                call.handle = actor.run.remote(chunk)
                self.queues[i].append(call)
                pending[call.handle] = call

    def _collect(self, call: Call, window: Window, pending: dict[Any, Call], on_record: OnRecord) -> None:
        """Hand a finished call's records over, or deal with its error."""
        try:
            records: list[ModelRecord] = ray.get(call.handle)
        except RayTaskError as exc:  # our supervisor raised: a bug, not a lost worker; never retried
            self._dequeue(call)
            window.done(call, time.monotonic())
            for ref in call.refs:
                on_record(self._failed(ref, Status.ERROR, ReasonKind.HARNESS, f"supervisor raised: {_first_line(exc)}"))
            return
        except RayError as exc:
            oom = _is_oom(exc)
            if oom:
                self._oom(call, exc, window, pending, on_record)
            self._lose_actor(call.worker, exc, window, pending, on_record, ran_found=oom)
            return
        tries = {ref.key: window.attempts.get(ref.key, 0) for ref in call.refs}
        self.backoff_s, self.oom_starts = 0.0, 0
        self._dequeue(call)
        window.done(call, time.monotonic())
        for record in records:
            if tries.get(record.key):
                record.notes["infra_retries"] = tries[record.key]
            on_record(record)

    def _oom(self, call: Call, exc: RayError, window: Window, pending: dict[Any, Call], on_record: OnRecord) -> None:
        """Ray's memory monitor killed the worker running ``call``: its model (the first of
        the call, the one in flight) is an ``oom`` record, the others go back in line; then
        pause so the node can recover before the replacement worker starts."""
        self._dequeue(call)
        pending.pop(call.handle, None)
        window.done(call, time.monotonic())
        first, *rest = call.refs
        window.give_back(rest)
        message = f"the node ran low on memory and Ray's memory monitor killed the worker: {_first_line(exc)}"
        on_record(self._failed(first, Status.CRASH, ReasonKind.OOM, message))
        self._back_off()

    def _starved_by_memory(self, window: Window, on_record: OnRecord) -> None:
        """Workers keep being killed for memory before any model runs: record the next model
        as ``oom`` so the sweep moves on (and ends) instead of waiting or aborting."""
        if self.oom_starts < OOM_STARTS_PER_MODEL:
            return
        self.oom_starts, self.backoff_s = 0, 0.0
        chunk = window.take()
        if not chunk:
            return
        window.in_flight -= len(chunk)
        window.give_back(chunk[1:])
        message = f"the node ran low on memory: Ray killed {OOM_STARTS_PER_MODEL} workers in a row before this model could start"
        on_record(self._failed(chunk[0], Status.CRASH, ReasonKind.OOM, message))

    def _back_off(self) -> None:
        """Pause, longer each time memory runs out again, so the node can free memory."""
        first, longest = OOM_BACKOFF_S
        self.backoff_s = min(longest, self.backoff_s * 2 if self.backoff_s else first)
        time.sleep(self.backoff_s)

    def _dequeue(self, call: Call) -> None:
        queue = self.queues[call.worker]
        if call in queue:
            queue.remove(call)
        if queue and queue[0].started is None:
            queue[0].started = time.monotonic()

    def _lose_actor(
        self, i: int, exc: BaseException, window: Window, pending: dict[Any, Call], on_record: OnRecord, *, ran_found: bool = False
    ) -> None:
        """Replace a lost actor; its running call counts as an attempt, queued ones do not
        (``ran_found``: the running call was dealt with already)."""
        calls, self.queues[i] = self.queues[i], []
        running = self._running_call(i, calls)
        old, self.actors[i] = self.actors[i], self._new_actor(i)
        for n, call in enumerate(calls):
            pending.pop(call.handle, None)
            if running is not None and not ran_found:
                # The worker's own progress file names the model it was in: calls before it
                # finished (their replies may be lost with the worker), calls after never started.
                if n != running:
                    if n > running or not self._kept(call, window, on_record):
                        window.requeue(call, ran=False)
                    continue
            if not ran_found and self._kept(call, window, on_record):
                continue
            ran = not ran_found
            ran_found = True
            for ref, tries in window.requeue(call, ran=ran):
                message = f"lost its Ray worker {tries} times (infrastructure, not the model): {_first_line(exc)}"
                on_record(self._failed(ref, Status.ERROR, ReasonKind.CRASH, message))
        ray.kill(old, no_restart=True)

    def _running_call(self, i: int, calls: list[Call]) -> int | None:
        """Index in ``calls`` of the call whose model the lost actor's worker was running,
        from its progress file (on this machine only); None when it cannot be told."""
        found = breadcrumbs.read(local_progress_file(self.pids.get(i)))
        if found.key is None:
            return None
        for n, call in enumerate(calls):
            if found.key in {ref.key for ref in call.refs}:
                return n
        return None

    def _kept(self, call: Call, window: Window, on_record: OnRecord) -> bool:
        """Whether ``call`` finished before its actor went: then its records are handed over."""
        done, _ = ray.wait([call.handle], timeout=0)
        if not done:
            return False
        try:
            records = ray.get(call.handle)
        except RayError:
            return False
        window.done(call, time.monotonic())
        for record in records:
            on_record(record)
        return True

    def _check_backstops(self, window: Window, pending: dict[Any, Call], on_record: OnRecord) -> None:
        """Kill an actor whose running call outlived every per-model timeout (it is wedged)."""
        now = time.monotonic()
        for i, queue in enumerate(self.queues):
            if queue and queue[0].started is not None:
                # Each model may take its timeout twice: once on the device, once for its CPU control.
                limit = len(queue[0].refs) * 2 * (self.cfg.execution.timeout + 10.0) + BACKSTOP_GRACE_S
                if now - queue[0].started > limit:
                    wedged = TimeoutError(f"supervisor silent for {now - queue[0].started:.0f}s")
                    self._lose_actor(i, wedged, window, pending, on_record)

    def _failed(self, ref: ModelRef, status: Status, kind: ReasonKind, message: str) -> ModelRecord:
        return failure_record(
            ref, self.cfg, status=status, kind=kind, message=message, infrastructure=True,
        )

    def _kill_actors(self) -> None:
        # Idle actors politely first, so workers end and temp files go; busy ones (an
        # interrupted sweep) at once: their workers die with them.
        idle = [a for i, (a, q) in enumerate(zip(self.actors, self.queues)) if not q and i not in self.starting]
        if idle:
            try:
                ray.wait([a.shutdown.remote() for a in idle], num_returns=len(idle), timeout=10.0)
            except RayError:
                pass
        for actor in self.actors:
            ray.kill(actor, no_restart=True)
        self.actors, self.queues, self.starting = [], [], {}

    def close(self) -> None:
        """Stop the actors (their workers die with them) and local Ray if it was started here."""
        if ray.is_initialized():
            self._kill_actors()
            if self.started_ray:
                ray.shutdown()
        self.started_ray = False
        # Actors killed mid-model (an interrupted sweep) could not remove their folders;
        # on this machine (local Ray, or a cluster node here) the driver does it for them.
        for folder in Path(tempfile.gettempdir()).glob(f"{WORKDIR_PREFIX}{self.tag}-*"):
            shutil.rmtree(folder, ignore_errors=True)


def _is_oom(exc: BaseException) -> bool:
    """Whether Ray's memory monitor killed the worker (raised as such, or as the cause of an actor's death)."""
    return isinstance(exc, OutOfMemoryError) or "running low on memory" in str(exc) or "OutOfMemoryError" in str(exc)


def local_progress_file(pid: int | None) -> str:
    """The progress file of the worker of the actor ``pid`` when it runs on this machine."""
    if pid is None:
        return ""
    found = glob.glob(os.path.join(tempfile.gettempdir(), f"{WORKDIR_PREFIX}*-{pid}-*", "worker-0.progress"))
    return found[0] if found else ""


def _first_line(exc: BaseException) -> str:
    """``Type: first line`` plus, for wrapped errors, the innermost ``...Error: ...`` line."""
    lines = [line.strip() for line in str(exc).strip().splitlines() if line.strip()]
    head = f"{type(exc).__name__}: {lines[0] if lines else ''}"
    causes = [line for line in lines[1:] if "Error:" in line and not line.startswith("ray.exceptions.Ray")]
    if causes:
        head += f" ({causes[-1]})"
    return head[:400]
