"""Write a set of output files together: each to a temporary name, then all renamed at once.

A report is several files (report.md, summary.json, records.parquet, charts/) that must
agree with each other. ``Staged`` writes every one of them beside its final name first;
only when all were written are they renamed into place, so a failure (a read-only folder,
a full disk, a bug half-way) leaves the previous outputs as they were and no temporary
files behind. Text passes the redactor on its way out.
"""

from __future__ import annotations

import contextlib
import os
import shutil
from pathlib import Path
from types import TracebackType

from sweeper.redact import redact
from sweeper.settings.errors import UsageError


class Staged:
    """``with Staged(folder) as out: out.text("report.md", ...)``; renamed on a clean exit."""

    def __init__(self, folder: Path) -> None:
        self.folder = Path(folder)
        self._tag = f".tmp-{os.getpid()}"
        self._files: list[tuple[Path, Path]] = []  # (staged, final)
        self._dirs: list[tuple[Path, Path]] = []
        self._remove: list[Path] = []

    def _staged(self, name: str) -> Path:
        final = self.folder / name
        return final.with_name(f".{final.name}{self._tag}")

    def path(self, name: str) -> Path:
        """A temporary path to write ``name`` to (for writers that take a path)."""
        staged = self._staged(name)
        self._files.append((staged, self.folder / name))
        return staged

    def text(self, name: str, content: str) -> None:
        """Stage ``name`` with ``content`` (redacted, UTF-8)."""
        self._write(self.path(name), redact(content).encode("utf-8"))

    def copy(self, source: Path, name: str) -> None:
        """Stage a copy of ``source`` as ``name`` (text files are redacted on the way)."""
        data = Path(source).read_bytes()
        if Path(name).suffix in {".md", ".json", ".jsonl", ".txt", ".html", ".csv"}:
            data = redact(data.decode("utf-8", "replace")).encode("utf-8")
        self._write(self.path(name), data)

    def folder_path(self, name: str) -> Path:
        """A fresh temporary folder that replaces the folder ``name`` on commit."""
        staged = self._staged(name)
        shutil.rmtree(staged, ignore_errors=True)
        self._dirs.append((staged, self.folder / name))
        try:
            staged.mkdir(parents=True)
        except OSError as exc:
            raise self._error(exc) from None
        return staged

    def remove(self, name: str) -> None:
        """Delete ``name`` (if present) on commit: an output that no longer applies."""
        self._remove.append(self.folder / name)

    def _write(self, path: Path, data: bytes) -> None:
        try:
            path.write_bytes(data)
        except OSError as exc:
            raise self._error(exc) from None

    def _error(self, exc: OSError) -> UsageError:
        return UsageError(f"cannot write into {self.folder}: {exc.strerror or exc}; nothing was changed")

    def commit(self) -> None:
        """Rename every staged file and folder into place, then remove what no longer applies."""
        for staged, final in self._files:
            os.replace(staged, final)
        for staged, final in self._dirs:
            old = final.with_name(f".{final.name}{self._tag}.old")
            if final.exists():
                os.replace(final, old)
            os.replace(staged, final)
            shutil.rmtree(old, ignore_errors=True)
        for path in self._remove:
            path.unlink(missing_ok=True)

    def abort(self) -> None:
        """Remove every staged file and folder; the previous outputs stay as they were."""
        for staged, _ in self._files:
            with contextlib.suppress(OSError):
                staged.unlink(missing_ok=True)
        for staged, _ in self._dirs:
            shutil.rmtree(staged, ignore_errors=True)

    def __enter__(self) -> Staged:
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        if kind is None:
            self.commit()
        else:
            self.abort()
