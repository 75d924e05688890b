"""The ``catalog`` source: models listed in a CSV, JSONL or Parquet file.

A catalog is a saved listing of Hub models (a snapshot from ``hub``, or a file someone
made). Only ``id`` is required; ``rank``, ``downloads``, ``pipeline_tag``,
``library_name``, ``model_type``, ``config`` and ``sha``/``revision`` are used when
present. Refs come out in rank order: by ``rank`` when the file has it, else by
``downloads`` (most first), else in file order; ties keep file order.

The file is read in one streaming pass (rows, not a data frame) and validated completely
before the first ref is handed out, so a bad row stops the sweep before it starts instead
of halfway through. Rows are light tuples; a ``ModelRef`` is built only when iterated.
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sweeper.records import ModelRef
from sweeper.settings.errors import UsageError
from sweeper.sources.catalog_rows import Row, read_rows, suffix_of

if TYPE_CHECKING:
    from sweeper.settings.config import SweepConfig

_DATE_IN_NAME = re.compile(r"(?<!\d)(\d{4}-\d{2}(?:-\d{2})?)(?!\d)")


class CatalogSource:
    """Refs from a catalog file, in rank order."""

    name = "catalog"

    def __init__(self, path: str | Path, *, source_label: str = "catalog") -> None:
        self.path = Path(path).expanduser()
        self.source_label = source_label
        if not self.path.exists():
            raise UsageError(f"catalog not found: {self.path}")
        if not self.path.is_file():
            raise UsageError(f"catalog is not a file: {self.path}")
        suffix_of(self.path)  # unknown extensions fail here, before any reading
        self._rows: list[Row] | None = None

    def _load(self) -> list[Row]:
        if self._rows is None:
            rows = read_rows(self.path)
            if not rows:
                raise UsageError(f"catalog {self.path} is empty (no model rows)")
            self._rows = _in_rank_order(rows)
        return self._rows

    def refs(self) -> Iterator[ModelRef]:
        """Yield one ref per model id (first occurrence wins), in rank order."""
        rows = self._load()
        seen: set[str] = set()
        for position, row in enumerate(rows, start=1):
            if row.model_id in seen:
                continue  # a listing that repeats an id still sweeps it once
            seen.add(row.model_id)
            yield _to_ref(row, position, self.source_label)

    def __iter__(self) -> Iterator[ModelRef]:
        return self.refs()

    def describe(self) -> dict[str, str]:
        """What was read: the file, its model count and the day the listing was made."""
        return {
            "name": self.name,
            "path": str(self.path),
            "rows": str(len(self._load())),
            "snapshot_date": snapshot_date(self.path),
        }


def snapshot_date(path: Path) -> str:
    """The listing's date: from the file name (``...-2025-03.csv``), else its mtime."""
    found = _DATE_IN_NAME.findall(path.name)
    if found:
        return found[-1]
    mtime = path.stat().st_mtime
    return dt.datetime.fromtimestamp(mtime, tz=dt.timezone.utc).date().isoformat()


def _in_rank_order(rows: list[Row]) -> list[Row]:
    """Sort by rank, else downloads (descending); Python's sort is stable for ties."""
    if any(r.rank is not None for r in rows):
        # Rows without a rank go after the ranked ones, in file order.
        return sorted(rows, key=lambda r: (r.rank is None, r.rank or 0))
    if any(r.downloads is not None for r in rows):
        return sorted(rows, key=lambda r: (r.downloads is None, -(r.downloads or 0)))
    return rows


def _to_ref(row: Row, position: int, label: str) -> ModelRef:
    config: dict[str, Any] | None = row.config
    model_type = row.model_type or (config.get("model_type") if config else None)
    return ModelRef(
        model_id=row.model_id,
        # A listed rank is the Hub's rank and is kept; otherwise the position is the rank.
        rank=row.rank if row.rank is not None else position,
        downloads=row.downloads,
        pipeline_tag=row.pipeline_tag,
        library_name=row.library_name,
        model_type=model_type if isinstance(model_type, str) and model_type else None,
        revision=row.revision,
        config=config,
        source=label,
    )


def catalog_source(cfg: SweepConfig) -> CatalogSource:
    """The ``catalog`` source for ``--catalog PATH``."""
    if not cfg.source.catalog:
        raise UsageError("--source catalog needs --catalog PATH")
    return CatalogSource(cfg.source.catalog)
