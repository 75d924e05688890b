"""Run a function in a forked child with a time and memory limit.

Torch-MLIR's pipeline can run away on some graphs (minutes, gigabytes); a compiler that
never answers is a compile error, not a hung sweep. The child inherits the graph by fork,
so nothing needs pickling on the way in; only the (small) result comes back.
"""

from __future__ import annotations

import os
import pickle
import resource
import select
import signal
import time
from collections.abc import Callable
from typing import Any


class Overrun(Exception):
    """The child ran out of time or memory, or died."""


def vm_bytes() -> int:
    """This process's address space (bytes), what ``RLIMIT_AS`` limits."""
    with open("/proc/self/statm") as fh:
        return int(fh.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")


def run_isolated(fn: Callable[[], Any], *, timeout: float, extra_memory: int) -> Any:
    """``fn()`` in a forked child; raises ``Overrun`` past ``timeout`` seconds or when the
    child needs more than ``extra_memory`` bytes beyond what the parent maps."""
    read_fd, write_fd = os.pipe()
    limit = vm_bytes() + extra_memory
    pid = os.fork()
    if pid == 0:  # child: never returns
        os.close(read_fd)
        try:
            resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
            _one_thread()
            payload = pickle.dumps(("ok", fn()))
        except BaseException as exc:  # noqa: BLE001 - everything goes back to the parent
            payload = pickle.dumps(("error", f"{type(exc).__name__}: {exc}"))
        with os.fdopen(write_fd, "wb") as out:
            out.write(payload)
        os._exit(0)
    os.close(write_fd)
    try:
        data = _read_all(read_fd, time.monotonic() + timeout)
    finally:
        os.close(read_fd)
        _reap(pid)
    if data is None:
        raise Overrun(f"did not finish within {timeout:.0f} s")
    if not data:
        raise Overrun("ran out of memory or crashed")
    status, value = pickle.loads(data)
    if status == "error":
        raise Overrun(value)
    return value


def _one_thread() -> None:
    """Run the child's torch ops on its own thread: the parent's OpenMP pool does not
    survive the fork, and the first op big enough to go parallel (Torch-MLIR's as_strided
    rewrite builds index tensors of a whole frame matrix) would wait on it forever."""
    import sys

    torch = sys.modules.get("torch")
    if torch is not None:
        torch.set_num_threads(1)


def _read_all(fd: int, deadline: float) -> bytes | None:
    chunks: list[bytes] = []
    while True:
        left = deadline - time.monotonic()
        if left <= 0:
            return None
        ready, _, _ = select.select([fd], [], [], left)
        if not ready:
            return None
        chunk = os.read(fd, 1 << 20)
        if not chunk:
            return b"".join(chunks)
        chunks.append(chunk)


def _reap(pid: int) -> None:
    done, _ = os.waitpid(pid, os.WNOHANG)
    if done == 0:
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
