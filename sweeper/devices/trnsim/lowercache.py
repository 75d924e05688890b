"""Lowering verdicts shared between processes: every worker of a sweep, and sweeps.

A lowering verdict depends on the graph (``graphkey.graph_key``), the limits it ran under,
and what decides how the tool reads it: Torch-MLIR's version, torch's version and the
device profile (its hash). The same graph recurs across checks (one family's blocks under
different heads, the shapes stage's recompiles, one component in many pipelines), and in
a worker other than the one that lowered it first. Each verdict is one small file
(``ROOT/ab/abcdef....json``, written atomically), so any number of workers, and sweeps,
may share a folder: a sweep's own (``OUT/.lowerings``), or ``--cache DIR/lowerings``.

Unreadable entries are misses, never errors; a verdict reached at the host's limits
(time, memory) is never kept. ``TRNSIM_LOWERING_LOG`` names a file that gets one line per
lowering asked for (its key, and whether it was lowered, answered in this process or
answered from the folder): ``benchmarks/lowering_repeats.py`` reads it.
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import json
import os
import tempfile
import zlib
from pathlib import Path
from typing import Any

# The folder the device names at set-up (``configure``); the environment variable lets a
# lowering outside a sweep (a reproducer, a test) share one too.
FOLDER_ENV = "TRNSIM_LOWERING_CACHE"
LOG_ENV = "TRNSIM_LOWERING_LOG"

_STATE: dict[str, Any] = {"root": None, "salt": ""}


def configure(folder: str | os.PathLike[str] | None, *, salt: str) -> None:
    """Share verdicts through ``folder`` (None: this process keeps its own), under ``salt``
    (what the verdict depends on besides the graph: tool, torch, profile)."""
    _STATE["root"] = Path(folder) if folder else None
    _STATE["salt"] = salt


def folder() -> Path | None:
    """The shared folder in use, or None."""
    root = _STATE["root"]
    if root is None and os.environ.get(FOLDER_ENV):
        root = Path(os.environ[FOLDER_ENV])
    return root


def _path(root: Path, key: str) -> Path:
    digest = hashlib.sha256(f"{_STATE['salt']}|{key}".encode()).hexdigest()
    return root / digest[:2] / f"{digest}.json"


def get(key: str) -> dict[str, Any] | None:
    """The verdict kept for ``key`` (a plain dict), or None."""
    root = folder()
    if root is None:
        return None
    try:
        data = json.loads(_path(root, key).read_text(encoding="utf-8"))
        if data.get("stablehlo_z"):
            data["stablehlo"] = zlib.decompress(base64.b64decode(data.pop("stablehlo_z"))).decode("utf-8")
        return data
    except (OSError, ValueError, TypeError, AttributeError, zlib.error):
        return None


def put(key: str, verdict: dict[str, Any]) -> None:
    """Keep ``verdict`` for ``key`` (never raises: a full disk costs reuse, not the check)."""
    root = folder()
    if root is None:
        return
    data = dict(verdict)
    text = data.pop("stablehlo", "")
    if text:  # StableHLO text is long and repetitive: a tenth of its size compressed
        data["stablehlo_z"] = base64.b64encode(zlib.compress(text.encode("utf-8"), 6)).decode("ascii")
    path = _path(root, key)
    with contextlib.suppress(OSError):
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, suffix=".tmp")
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as fh:
                json.dump(data, fh)
            os.replace(tmp, path)
        finally:
            with contextlib.suppress(OSError):
                os.unlink(tmp)


def log(key: str, name: str, source: str, seconds: float) -> None:
    """One line for ``TRNSIM_LOWERING_LOG``: ``key name source seconds`` (source: lowered,
    process or shared)."""
    target = os.environ.get(LOG_ENV)
    if not target:
        return
    line = f"{key} {name} {source} {seconds:.3f}\n".encode()
    with contextlib.suppress(OSError):
        fd = os.open(target, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            os.write(fd, line)  # one write of a short line: whole among concurrent workers
        finally:
            os.close(fd)
