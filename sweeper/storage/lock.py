"""One sweep owns its output folder: an exclusive ``flock`` on ``OUT/.sweep.lock``.

Two sweeps appending to one records.jsonl would record every model twice. The lock is
taken before anything is written and held until the sweep (and its report) is done; the
kernel drops it when the process dies, however it dies, so a killed sweep never leaves a
stale lock. The holder writes its pid into the file so the second sweep can name it.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
from collections.abc import Iterator
from pathlib import Path

from sweeper.settings.errors import UsageError
from sweeper.storage.folder import SweepFolder


def _holder(path: Path) -> str:
    with contextlib.suppress(OSError, ValueError):
        pid = int(path.read_text().strip() or "0")
        if pid:
            return f"pid {pid}"
    return "an unknown process"


@contextlib.contextmanager
def own_folder(folder: Path) -> Iterator[Path]:
    """Hold the folder's lock for the block; ``UsageError`` naming the holder if taken."""
    lock = SweepFolder(folder).lock
    folder = lock.parent
    folder.mkdir(parents=True, exist_ok=True)
    fd = os.open(lock, os.O_RDWR | os.O_CREAT, 0o644)  # not inherited by children
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise UsageError(
                f"{folder} is in use by another sweep ({_holder(lock)}); "
                "wait for it to finish or choose another --out"
            ) from None
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        yield folder
    finally:
        os.close(fd)  # releases the lock; the file stays (removing it would race a new holder)
