"""The worker process as an OS process: how it starts, and what it leaves behind when it dies.

``Child`` starts ``python -m sweeper.executors.worker`` on an inherited socket; the
helpers read what a dead worker left (its exit signal, faulthandler's frame, its last
output) and size its memory limit.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import psutil

from sweeper.executors.worker import THREAD_VARS
from sweeper.libraries.transformers.memory_estimate import WORKER_LIMIT_ENV

MIB = 1024 * 1024
MIN_LIMIT_MB = 512  # below this not even torch and transformers import


class Child:
    """A fresh interpreter running ``worker.main`` on an inherited socket.

    Not multiprocessing's spawn: that re-imports the parent's ``__main__`` (a CLI, a test
    driver, Ray's worker) in every worker, and never fork a threaded parent (Ray workers are).
    """

    def __init__(self, fd: int, num_threads: int, log_path: str, *, memory_limit_mb: int | None = None) -> None:
        env = dict(os.environ)
        env.update({var: str(num_threads) for var in THREAD_VARS})  # before torch is imported
        env.pop(WORKER_LIMIT_ENV, None)
        if memory_limit_mb:  # the budget a model's memory estimate is held to
            env[WORKER_LIMIT_ENV] = str(int(memory_limit_mb))
        # The check function is pickled by reference: give the worker the parent's sys.path.
        env["PYTHONPATH"] = os.pathsep.join(p for p in sys.path if p)
        cmd = [sys.executable, "-m", "sweeper.executors.worker", str(fd)]
        # Models print (warnings, progress bars): keep it off the sweep's own terminal output.
        with open(log_path, "wb") as log:  # one worker's output at a time
            self.popen = subprocess.Popen(
                cmd, pass_fds=(fd,), env=env, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                start_new_session=True,  # Ctrl-C goes to the driver, which stops workers itself
            )
        self.pid = self.popen.pid

    def is_alive(self) -> bool:
        return self.popen.poll() is None

    def join(self, timeout: float) -> None:
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.popen.wait(timeout)

    @property
    def exitcode(self) -> int | None:
        return self.popen.returncode

    def kill(self) -> None:
        with contextlib.suppress(ProcessLookupError):
            self.popen.kill()


def memory_limit_mb(cfg: Any, workers_on_node: int) -> int:
    """``--memory-limit-mb``, else an even share of 80% of the memory *available* now.

    Available, not total: on a machine where other work holds memory, a share of the
    total is more than the workers can ever get, and the kernel (or Ray's memory monitor)
    would kill them before the guard saw anything.
    """
    if cfg.execution.memory_limit_mb:
        return int(cfg.execution.memory_limit_mb)
    available = psutil.virtual_memory().available / MIB
    return max(MIN_LIMIT_MB, int(available * 0.8 / max(1, workers_on_node)))


def signal_name(num: int) -> str:
    with contextlib.suppress(ValueError):
        return signal.Signals(num).name
    return f"signal {num}"


def log_tail(path: str, lines: int = 5, limit: int = 1000) -> str:
    """The last lines the worker printed (what a C++ abort says lands here)."""
    with contextlib.suppress(OSError):
        with open(path, "rb") as fh:
            fh.seek(0, os.SEEK_END)
            fh.seek(max(0, fh.tell() - 8 * limit))
            text = fh.read().decode("utf-8", "replace")
        kept = [line for line in text.splitlines() if line.strip()][-lines:]
        return "\n".join(kept)[-limit:]
    return ""


def fault_frame(path: str) -> str:
    """``, at file.py:12 in fn`` from faulthandler's dump of the crash, when it wrote one."""
    with contextlib.suppress(OSError):
        for line in Path(path).read_text(errors="replace").splitlines():
            line = line.strip()
            if line.startswith("File "):
                # File "/x/y/faults.py", line 12 in segfault_check
                parts = line.split('"')
                if len(parts) >= 3:
                    name = Path(parts[1]).name
                    rest = parts[2].replace(", line ", ":").strip()
                    return f", at {name}{rest}"
    return ""
