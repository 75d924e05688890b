"""One long-lived process per worker that lowers graphs, instead of a child forked per graph.

A fork per graph copies the worker's page tables (gigabytes once a model and its CPU
references are loaded) and makes both processes pay copy-on-write faults: on the top 1,000
that was a third of the lowering time, and the child's own work ran slower than in a fresh
process. The server is a fresh interpreter (running ``lowerserver_loop.serve``:
no model, no threads inherited) started when the device warms up, with Torch-MLIR imported
once. Graphs reach it as ``graphwire`` bytes over a pipe; each job runs under the limits a
forked child had: the time limit is the caller's (past it the server is killed and the next
job starts a new one), the memory limit is ``RLIMIT_AS`` set for the job (its address space
now plus the job's allowance). A server that dies (a crash, out of memory) answers
``Overrun`` as a child did, and is replaced. One that has grown past ``RETIRE_GROWTH`` since
it started is replaced after its job, so no verdict depends on what earlier graphs left behind.

Protocol: length-prefixed pickles; a job is ``(kind, payload, extra memory bytes, timeout)``
(``import``: a graph and its name; ``probes``: ``lowering.blame``'s probes, judged in order
as a forked child judged them), an
answer ``("ok", (value, wall, cpu, retire))``, ``("undecodable", text)`` (the graph is lowered
where it came from) or ``("error", text)``; the server says
``"ready"`` once it has imported what it needs.
"""

from __future__ import annotations

import contextlib
import os
import pickle
import select
import signal
import struct
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any, BinaryIO

import sweeper.devices.trnsim.phases as phases
from sweeper.devices.base import HELPER_PROCESS_MARK
from sweeper.devices.trnsim.isolate import Overrun

_HEADER = struct.Struct("<Q")
_SERVE = "from sweeper.devices.trnsim.lowerserver_loop import serve; serve()"
# Past this growth of its address space since it started, the server is replaced.
RETIRE_GROWTH = int(float(os.environ.get("TRNSIM_LOWERING_SERVER_GROWTH_GB", "1")) * (1 << 30))
# How long a starting server may take to import torch and Torch-MLIR (seconds).
START_TIMEOUT_S = 300.0
# ``TRNSIM_LOWERING_SERVER=0`` lowers every graph in a forked child, as without the server.
ENABLED = os.environ.get("TRNSIM_LOWERING_SERVER", "1") != "0"


class _Server:
    """The running server process and its pipes."""

    def __init__(self) -> None:
        root = str(Path(__file__).resolve().parents[3])
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join([root] + [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p])
        self.process = subprocess.Popen([sys.executable, "-c", _SERVE, HELPER_PROCESS_MARK],
                                        stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env,
                                        start_new_session=True)
        self.ready = False

    def request(self, job: tuple[Any, ...], timeout: float) -> tuple[str, Any]:
        assert self.process.stdin is not None and self.process.stdout is not None
        if not self.ready:
            # Its own phase: a server replaced within a check (after a timeout, a crash or
            # growth) costs that check this wait.
            with phases.phase("server_start"):
                started = read_message(self.process.stdout, time.monotonic() + START_TIMEOUT_S)
            if started != ("ready", None):
                raise _Unusable("the lowering server did not start")
            self.ready = True
        try:
            write_message(self.process.stdin, job)
        except (BrokenPipeError, OSError) as exc:
            raise _Died() from exc
        answer = read_message(self.process.stdout, time.monotonic() + timeout)
        if answer is None:
            raise _TimedOut()
        if answer is EOF:
            raise _Died()
        return answer

    def stop(self) -> None:
        with contextlib.suppress(OSError):
            os.killpg(self.process.pid, signal.SIGKILL)
        self.process.wait()
        for pipe in (self.process.stdin, self.process.stdout):
            with contextlib.suppress(OSError, AttributeError):
                pipe.close()


class Undecodable(Exception):
    """The server could not rebuild a graph from its bytes (the caller lowers it itself)."""


class _Unusable(Exception):
    """The server cannot run here: lower in forked children instead."""


class _Died(Exception):
    pass


class _TimedOut(Exception):
    pass


EOF = ("eof", None)
_LOCK = threading.Lock()
_STATE: dict[str, Any] = {"server": None, "unusable": not ENABLED, "pid": None}


def start() -> None:
    """Start the server in the background (it imports while the caller goes on)."""
    with _LOCK:
        _ensure()


def usable() -> bool:
    """Whether jobs go to the server (else the caller forks a child per graph)."""
    return not _STATE["unusable"]


def lower(data: bytes, name: str, *, timeout: float, extra_memory: int) -> tuple[Any, float, float]:
    """``lowering._import`` of the ``graphwire`` graph ``data`` in the server: its value,
    and the server's wall and CPU seconds for it. ``Overrun`` as ``isolate.run_isolated``
    raises it: past ``timeout``, or when the server dies (out of memory, a crash).
    ``RuntimeError`` when the server cannot run here or cannot rebuild the graph (the
    caller forks instead)."""
    return _job("import", (data, name), timeout=timeout, extra_memory=extra_memory)


def judge(probes: list[bytes | bool], *, timeout: float, extra_memory: int) -> tuple[Any, float, float]:
    """``lowering.blame``'s probes judged in order in the server, each a ``graphwire``
    graph to lower alone, or its verdict when known (True: lowers); the value is the index
    of the first that fails (or None) and the indices of those that lowered. As ``lower``
    for limits and errors; ``extra_memory`` is each probe's allowance."""
    return _job("probes", probes, timeout=timeout, extra_memory=extra_memory)


def _job(kind: str, payload: Any, *, timeout: float, extra_memory: int) -> tuple[Any, float, float]:
    with _LOCK:
        server = _ensure()
        if server is None:
            raise RuntimeError("no lowering server")
        try:
            status, value = server.request((kind, payload, extra_memory, timeout), timeout)
        except _Unusable as exc:
            _drop(unusable=True)
            raise RuntimeError(str(exc)) from exc
        except _TimedOut:
            _drop()
            raise Overrun(f"did not finish within {timeout:.0f} s") from None
        except _Died:
            _drop()
            raise Overrun("ran out of memory or crashed") from None
        if status == "undecodable":  # the server is fine; this graph is lowered where it came from
            raise RuntimeError(f"the lowering server could not rebuild the graph: {value}")
        if status == "error":
            _drop()
            raise Overrun(value)
        result, wall, cpu, retire = value
        if retire:
            _drop()
        return result, wall, cpu


def shutdown() -> None:
    """Stop the server (a new one starts with the next job)."""
    with _LOCK:
        _drop()


def _ensure() -> _Server | None:
    if _STATE["unusable"]:
        return None
    if _STATE["server"] is not None and _STATE["pid"] != os.getpid():
        _STATE["server"] = None  # a forked copy of this process: the server is the parent's
    if _STATE["server"] is None:
        try:
            _STATE["server"] = _Server()
            _STATE["pid"] = os.getpid()
        except OSError:
            _STATE["unusable"] = True
            return None
    return _STATE["server"]


def _drop(*, unusable: bool = False) -> None:
    server = _STATE["server"]
    _STATE["server"] = None
    if unusable:
        _STATE["unusable"] = True
    if server is not None and _STATE["pid"] == os.getpid():
        server.stop()


def write_message(pipe: BinaryIO, message: Any) -> None:
    payload = pickle.dumps(message, protocol=pickle.HIGHEST_PROTOCOL)
    pipe.write(_HEADER.pack(len(payload)) + payload)
    pipe.flush()


def read_message(pipe: BinaryIO, deadline: float) -> Any:
    """The next message, ``EOF`` when the other end is gone, ``None`` past ``deadline``."""
    header = _read_exactly(pipe, _HEADER.size, deadline)
    if header is None or header is EOF:
        return header
    body = _read_exactly(pipe, _HEADER.unpack(header)[0], deadline)
    if body is None or body is EOF:
        return body
    return pickle.loads(body)


def _read_exactly(pipe: BinaryIO, size: int, deadline: float) -> Any:
    fd = pipe.fileno()
    chunks: list[bytes] = []
    left = size
    while left:
        wait = None if deadline == float("inf") else deadline - time.monotonic()
        if wait is not None and wait <= 0:
            return None
        ready, _, _ = select.select([fd], [], [], wait)
        if not ready:
            return None
        chunk = os.read(fd, min(left, 1 << 20))
        if not chunk:
            return EOF
        chunks.append(chunk)
        left -= len(chunk)
    return b"".join(chunks)
