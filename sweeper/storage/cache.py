"""An opt-in result cache across sweeps (``--cache DIR``), keyed by check fingerprint.

One JSON file per fingerprint (``DIR/ab/abcdef....json``, the record of the model that
ran it), written atomically, so several sweeps may share a folder and a nightly sweep
re-runs only what changed: new models, new library versions, a new device profile, new
sweeper code (the fingerprint covers them all). Timeouts and infrastructure failures are
never cached: they say more about the machine that night than about the model.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from pathlib import Path

from sweeper.records import ModelRecord, Status
from sweeper.settings.errors import UsageError


class ResultCache:
    """Records by fingerprint in a folder; unreadable entries are misses, never errors."""

    def __init__(self, root: str | os.PathLike[str]) -> None:
        self.root = Path(root)
        try:
            self.root.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise UsageError(f"--cache {root}: cannot create the folder ({exc.strerror or exc})") from None
        if not self.root.is_dir():
            raise UsageError(f"--cache {root} is not a folder")
        self.hits = 0
        self.writes = 0

    def _path(self, fingerprint: str) -> Path:
        return self.root / fingerprint[:2] / f"{fingerprint}.json"

    def get(self, fingerprint: str) -> ModelRecord | None:
        """The cached record for ``fingerprint``, or None."""
        try:
            record = ModelRecord.from_json(self._path(fingerprint).read_text(encoding="utf-8"))
        except (OSError, ValueError, KeyError, TypeError):
            return None
        self.hits += 1
        return record

    def put(self, fingerprint: str, record: ModelRecord) -> None:
        """Keep ``record`` for ``fingerprint`` (a timeout is not kept); never raises."""
        if record.status is Status.TIMEOUT or record.notes.get("infrastructure"):
            return
        path = self._path(fingerprint)
        with contextlib.suppress(OSError):
            path.parent.mkdir(exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=path.parent, suffix=".tmp")
            try:
                with os.fdopen(fd, "w", encoding="utf-8") as fh:
                    fh.write(record.to_json() + "\n")
                os.replace(tmp, path)
                self.writes += 1
            finally:
                with contextlib.suppress(OSError):
                    os.unlink(tmp)


def describe(cache: ResultCache | None) -> dict[str, object] | None:
    """For sweep.json: the folder and this run's hits and writes."""
    if cache is None:
        return None
    return {"path": str(cache.root), "hits": cache.hits, "writes": cache.writes}

