"""Append-only JSONL record store, written by the driver alone.

Every record is one line, flushed and fsync'd before the next model is reported done, so
a sweep killed at any moment loses at most the line being written. On open, a torn last
line (no newline, or not JSON) is cut off; ``done_keys`` tells the driver what to skip on
resume, and a key seen twice keeps its last record when read.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path

from sweeper.records import ModelRecord, Status
from sweeper.storage.folder import SweepFolder

_STATUSES = frozenset(s.value for s in Status)


class RecordStore:
    """``OUT/records.jsonl``: repair on open, append with fsync, read back leniently."""

    def __init__(self, out_dir: Path) -> None:
        folder = SweepFolder(out_dir)
        self.out_dir = folder.root
        self.path = folder.records
        self._fh = None
        self.repaired_bytes = 0
        self.rejected_path = folder.rejected
        self.rejected_lines = 0

    def open(self) -> RecordStore:
        """Create the folder, cut a torn tail, and open for appending."""
        self.out_dir.mkdir(parents=True, exist_ok=True)
        self.repaired_bytes = repair(self.path)
        self.rejected_lines = set_aside(self.path, self.rejected_path)
        self._fh = open(self.path, "a", encoding="utf-8")  # noqa: SIM115 (kept open for the sweep)
        return self

    def append(self, record: ModelRecord) -> None:
        """Write one record durably (one write call, then flush and fsync)."""
        self.append_all([record])

    def append_all(self, records: list[ModelRecord]) -> None:
        """Write records durably with one write and one fsync (a check and the copies of it
        arrive together; an fsync each would cost more than writing them)."""
        if self._fh is None:
            raise RuntimeError("RecordStore.append before open()")
        if not records:
            return
        self._fh.write("".join(record.to_json() + "\n" for record in records))
        self._fh.flush()
        os.fsync(self._fh.fileno())

    def close(self) -> None:
        if self._fh is not None:
            self._fh.close()
            self._fh = None

    def __enter__(self) -> RecordStore:
        return self.open()

    def __exit__(self, *exc: object) -> None:
        self.close()

    def done_keys(self) -> set[str]:
        """Keys of the models already recorded (what a resumed sweep skips)."""
        return {rec.get("key") or rec["model_id"] for rec in iter_raw(self.path)}


def repair(path: Path) -> int:
    """Cut a torn last line (killed mid-write); return how many bytes were removed."""
    if not path.exists() or path.stat().st_size == 0:
        return 0
    with open(path, "rb+") as fh:
        size = fh.seek(0, os.SEEK_END)
        # Find the start of the last line; the file is append-only, so only it can be torn.
        block = min(size, 1 << 20)
        fh.seek(size - block)
        tail = fh.read(block)
        if tail.endswith(b"\n"):
            last_nl = tail.rfind(b"\n", 0, len(tail) - 1)
            line = tail[last_nl + 1 :]
            if _is_json(line):
                return 0
            cut = size - len(line)
        else:
            last_nl = tail.rfind(b"\n")
            cut = size - block + last_nl + 1 if last_nl >= 0 else 0
        fh.truncate(cut)
        os.fsync(fh.fileno())
        return size - cut


def is_record(line: bytes) -> bool:
    """Whether one line of records.jsonl is a record: a JSON object naming a model and a status."""
    try:
        text = line.decode("utf-8").strip()
        # What ``ModelRecord.to_json`` writes, recognised without parsing (resume reads
        # every line once more right after); anything else is parsed and checked.
        if text.startswith('{"sweep_id": ') and text.endswith("}") and '"model_id": "' in text and '"status": "' in text:
            return True
        raw = json.loads(text)
    except ValueError:  # UnicodeDecodeError is a ValueError too
        return False
    return (
        isinstance(raw, dict)
        and isinstance(raw.get("model_id"), str)
        and bool(raw["model_id"])
        and raw.get("status") in _STATUSES
        and isinstance(raw.get("key", ""), str)
    )


def set_aside(path: Path, rejected: Path) -> int:
    """Move lines that are not records (``{}``, garbage, invalid UTF-8) to ``rejected``.

    A hand edit or a stray write must never block a resume; the lines are kept, not
    lost, and records.jsonl is rewritten (to a temporary name, then renamed) without them.
    Returns how many lines were moved.
    """
    if not path.exists():
        return 0
    keep: list[bytes] = []
    bad: list[bytes] = []
    with open(path, "rb") as fh:
        for line in fh:
            if not line.strip():
                continue
            (keep if is_record(line) else bad).append(line if line.endswith(b"\n") else line + b"\n")
    if not bad:
        return 0
    with open(rejected, "ab") as fh:
        fh.writelines(bad)
        fh.flush()
        os.fsync(fh.fileno())
    tmp = path.with_name(path.name + ".tmp")
    with open(tmp, "wb") as fh:
        fh.writelines(keep)
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, path)
    return len(bad)


def _is_json(line: bytes) -> bool:
    try:
        json.loads(line)
        return True
    except ValueError:
        return False


def iter_raw(path: Path) -> Iterator[dict]:
    """Record dicts in file order, skipping a torn or malformed line."""
    if not Path(path).exists():
        return
    with open(path, encoding="utf-8", errors="replace") as fh:
        for line in fh:
            line = line.strip()
            if not line:
                continue
            try:
                raw = json.loads(line)
            except ValueError:
                continue
            if isinstance(raw, dict) and raw.get("model_id"):
                yield raw


def read_records(out_dir: Path) -> list[ModelRecord]:
    """All records of a sweep folder, the last one winning for a repeated key."""
    latest: dict[str, dict] = {}
    for raw in iter_raw(SweepFolder(out_dir).records):
        latest[raw.get("key") or raw["model_id"]] = raw
    return [ModelRecord.from_dict(raw) for raw in latest.values()]
