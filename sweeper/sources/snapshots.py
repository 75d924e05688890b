"""Saved Hub listings: where they live, how they are written, which one is newest.

A successful ``hub`` listing is saved as ``hub-YYYY-MM-DD.jsonl`` so that a later run
without network (``--source auto``) sweeps the same models in the same order. The files
are catalogs: ``CatalogSource`` reads them. Only listing fields are written, never
request headers or tokens.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import re
from collections.abc import Iterable
from pathlib import Path

from sweeper.records import ModelRef

_NAME = re.compile(r"^hub-(\d{4}-\d{2}-\d{2})\.jsonl$")


def snapshot_dir() -> Path:
    """``$SWEEPER_CACHE/snapshots`` when set, else ``~/.cache/sweeper/snapshots``."""
    root = os.environ.get("SWEEPER_CACHE")
    base = Path(root).expanduser() if root else Path.home() / ".cache" / "sweeper"
    return base / "snapshots"


def snapshot_row(ref: ModelRef) -> dict[str, object]:
    """The catalog columns a snapshot keeps for one ref."""
    return {
        "rank": ref.rank,
        "id": ref.model_id,
        "downloads": ref.downloads,
        "pipeline_tag": ref.pipeline_tag,
        "library_name": ref.library_name,
        "model_type": ref.model_type,
        "sha": ref.revision,
    }


def ref_from_row(row: dict[str, object]) -> ModelRef:
    """The ref a snapshot row stands for (the inverse of ``snapshot_row``)."""
    return ModelRef(
        model_id=str(row["id"]),
        rank=int(row["rank"]),  # type: ignore[call-overload]
        downloads=row.get("downloads"),  # type: ignore[arg-type]
        pipeline_tag=row.get("pipeline_tag"),  # type: ignore[arg-type]
        library_name=row.get("library_name"),  # type: ignore[arg-type]
        model_type=row.get("model_type"),  # type: ignore[arg-type]
        revision=row.get("sha"),  # type: ignore[arg-type]
        source="hub",
    )


def save_snapshot(refs: Iterable[ModelRef], *, day: dt.date | None = None, directory: Path | None = None) -> Path:
    """Write refs as the day's snapshot; returns its path (see ``install_snapshot``)."""
    refs = list(refs)
    folder = directory or snapshot_dir()
    folder.mkdir(parents=True, exist_ok=True)
    # Write beside the target and rename, so a killed run never leaves half a snapshot
    # that a later offline run would take for a whole listing.
    partial = folder / f".hub-snapshot.{os.getpid()}.partial"
    with partial.open("w", encoding="utf-8") as handle:
        for ref in refs:
            handle.write(json.dumps(snapshot_row(ref), ensure_ascii=False) + "\n")
    return install_snapshot(partial, len(refs), day=day, directory=folder)


def install_snapshot(partial: Path, rows: int, *, day: dt.date | None = None, directory: Path | None = None) -> Path:
    """Rename a complete listing of ``rows`` rows into the day's snapshot; returns its path.

    An earlier snapshot of the same day is replaced, unless it lists more models: a quick
    ``--top 5`` run must not shrink the listing a later offline run falls back to.
    """
    folder = directory or snapshot_dir()
    day = day or dt.datetime.now(dt.timezone.utc).date()
    path = folder / f"hub-{day.isoformat()}.jsonl"
    if path.is_file() and _count_lines(path) > rows:
        partial.unlink(missing_ok=True)
        return path
    partial.replace(path)
    return path


def list_snapshots(directory: Path | None = None) -> list[Path]:
    """Saved snapshots, oldest first (by the date in the name, then modification time)."""
    folder = directory or snapshot_dir()
    if not folder.is_dir():
        return []
    found = [p for p in folder.iterdir() if _NAME.match(p.name) and p.is_file() and p.stat().st_size > 0]
    return sorted(found, key=lambda p: (_NAME.match(p.name).group(1), p.stat().st_mtime))  # type: ignore[union-attr]


def newest_snapshot(directory: Path | None = None) -> Path | None:
    """The most recent saved snapshot, or ``None`` when there is none."""
    found = list_snapshots(directory)
    return found[-1] if found else None


def _count_lines(path: Path) -> int:
    with path.open("rb") as handle:
        return sum(1 for line in handle if line.strip())
