"""Reading catalog files row by row: CSV(.gz), JSONL(.gz) and Parquet.

Each reader streams its file and turns every row into a validated ``Row``. Bad input
raises ``UsageError`` with one line that names the file and the line (text formats) or
row (Parquet) at fault, so the user can open the file right there.
"""

from __future__ import annotations

import csv
import gzip
import json
import math
import zlib
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import IO, Any, NamedTuple

from sweeper.settings.errors import UsageError

SUFFIXES = (".csv", ".csv.gz", ".jsonl", ".jsonl.gz", ".ndjson", ".parquet")
# Column names accepted for each field; the first is the documented one.
_ALIASES = {"id": ("id", "model_id", "modelId"), "revision": ("revision", "sha")}
_FIELDS = ("id", "rank", "downloads", "pipeline_tag", "library_name", "model_type", "revision", "config")


class Row(NamedTuple):
    """One validated catalog row (empty strings already turned into ``None``)."""

    model_id: str
    rank: int | None
    downloads: int | None
    pipeline_tag: str | None
    library_name: str | None
    model_type: str | None
    revision: str | None
    config: dict[str, Any] | None


def suffix_of(path: Path) -> str:
    """The catalog format from the file name; unknown extensions are a usage error."""
    name = path.name.lower()
    for suffix in sorted(SUFFIXES, key=len, reverse=True):
        if name.endswith(suffix):
            return suffix
    raise UsageError(f"catalog {path}: unknown extension; use one of {', '.join(SUFFIXES)}")


def read_rows(path: Path) -> list[Row]:
    """All rows of a catalog file, validated, in file order."""
    suffix = suffix_of(path)
    try:
        if suffix == ".parquet":
            return list(_parquet_rows(path))
        with _open_text(path) as handle:
            reader = _csv_rows if suffix.startswith(".csv") else _jsonl_rows
            return list(reader(path, handle))
    except (OSError, EOFError, UnicodeDecodeError, zlib.error) as exc:
        raise UsageError(f"catalog {path} cannot be read: {_one_line(exc)}") from None


def _open_text(path: Path) -> IO[str]:
    if path.name.lower().endswith(".gz"):
        return gzip.open(path, "rt", encoding="utf-8", newline="")
    return path.open("r", encoding="utf-8", newline="")


def _csv_rows(path: Path, handle: IO[str]) -> Iterator[Row]:
    reader = csv.reader(handle)
    header = next(reader, None)
    if header is None:
        raise UsageError(f"catalog {path} is empty (no header line)")
    names = [h.strip().lstrip("\ufeff") for h in header]
    _check_id_column(path, names)
    # Column positions per field, found once: the per-row work is then plain indexing.
    positions = [(f, tuple(names.index(k) for k in keys)) for f, keys in _layout(names).items()]
    single = all(len(idx) <= 1 for _, idx in positions)
    first = [(f, idx[0] if idx else len(names) + 1) for f, idx in positions]
    while True:
        try:
            values = next(reader)
        except StopIteration:
            return
        except csv.Error as exc:  # e.g. a field over csv's 128 KiB limit
            raise UsageError(f"catalog {path} line {reader.line_num}: {exc}") from None
        except (OSError, EOFError, zlib.error) as exc:  # a gzip stream corrupt part-way
            raise UsageError(f"catalog {path} cannot be read after line {reader.line_num}: {_one_line(exc)}") from None
        width = len(values)
        if single:  # the usual file: one column per field, no alias to choose between
            record = {f: values[i] if i < width else None for f, i in first}
        else:
            record = {f: _first(values[i] for i in idx if i < width) for f, idx in positions}
        if not (record["id"] or "").strip() and not any(v.strip() for v in values):
            continue  # blank lines carry no model
        yield _row(record, path, "line", reader.line_num)


def _jsonl_rows(path: Path, handle: IO[str]) -> Iterator[Row]:
    checked = False
    for number, line in enumerate(handle, start=1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError as exc:
            raise UsageError(f"catalog {path} line {number}: malformed JSON ({exc.msg})") from None
        if not isinstance(record, dict):
            raise UsageError(f"catalog {path} line {number}: expected a JSON object, got {type(record).__name__}")
        if not checked:
            _check_id_column(path, list(record))
            checked = True
        yield _row(_canonical(record), path, "line", number)


def _parquet_rows(path: Path) -> Iterator[Row]:
    import pyarrow.parquet as pq  # heavy; only Parquet catalogs pay for it

    try:
        parquet = pq.ParquetFile(path)
    except Exception as exc:  # noqa: BLE001 - pyarrow raises its own types for corrupt files
        raise UsageError(f"catalog {path} is not a readable Parquet file: {_one_line(exc)}") from None
    _check_id_column(path, parquet.schema_arrow.names)
    number = 0
    for batch in parquet.iter_batches(batch_size=8192):
        for record in batch.to_pylist():
            number += 1
            yield _row(_canonical(record), path, "row", number)


def _check_id_column(path: Path, names: list[str]) -> None:
    if not any(alias in names for alias in _ALIASES["id"]):
        shown = ", ".join(names) if names else "(none)"
        raise UsageError(f"catalog {path} has no 'id' column (columns: {shown})")


def _layout(names: list[str]) -> dict[str, tuple[str, ...]]:
    """For each field, the columns present that may hold it (aliases in preference order)."""
    present = set(names)
    return {f: tuple(k for k in _ALIASES.get(f, (f,)) if k in present) for f in _FIELDS}


def _first(values: Iterable[Any]) -> Any:
    """The first non-empty value (a field may come from more than one alias column)."""
    return next((v for v in values if not _is_empty(v)), None)


def _canonical(record: Mapping[str, Any]) -> dict[str, Any]:
    return {f: _first(record.get(k) for k in _ALIASES.get(f, (f,))) for f in _FIELDS}


def _row(record: Mapping[str, Any], path: Path, unit: str, number: int) -> Row:
    """Validate one record already keyed by field name; ``unit number`` locates errors."""
    model_id = _text(record["id"])
    if model_id is None:
        raise UsageError(f"catalog {path} {unit} {number}: empty id")
    rank, downloads, config = record["rank"], record["downloads"], record["config"]
    return Row(
        model_id=model_id,
        rank=None if rank is None else _count(rank, "rank", path, f"{unit} {number}", minimum=1),
        downloads=None if downloads is None else _count(downloads, "downloads", path, f"{unit} {number}", minimum=0),
        pipeline_tag=_text(record["pipeline_tag"]),
        library_name=_text(record["library_name"]),
        model_type=_text(record["model_type"]),
        revision=_text(record["revision"]),
        config=None if config is None else _config(config, path, f"{unit} {number}"),
    )


def _is_empty(value: Any) -> bool:
    if value is None:
        return True
    if isinstance(value, str):
        return not value.strip()
    return isinstance(value, float) and math.isnan(value)  # Parquet/pandas write NaN for missing


def _text(value: Any) -> str | None:
    if value is None:
        return None
    text = value.strip() if isinstance(value, str) else ("" if _is_empty(value) else str(value))
    return text or None


def _count(value: Any, what: str, path: Path, where: str, *, minimum: int) -> int | None:
    """A whole number >= minimum; "1234.0" is accepted because spreadsheets write it."""
    if _is_empty(value):
        return None
    number: int | None = None
    if isinstance(value, int) and not isinstance(value, bool):
        number = value
    elif isinstance(value, float) and value.is_integer():
        number = int(value)
    elif isinstance(value, str):
        text = value.strip()
        try:
            number = int(text)
        except ValueError:
            try:
                as_float = float(text)
            except ValueError:
                as_float = math.nan
            number = int(as_float) if as_float.is_integer() else None
    if number is None or number < minimum:
        raise UsageError(f"catalog {path} {where}: bad {what} value {value!r} (want a whole number >= {minimum})")
    return number


def _config(value: Any, path: Path, where: str) -> dict[str, Any] | None:
    if _is_empty(value):
        return None
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except json.JSONDecodeError as exc:
            raise UsageError(f"catalog {path} {where}: config is not valid JSON ({exc.msg})") from None
    if not isinstance(value, dict):
        raise UsageError(f"catalog {path} {where}: config must be a JSON object, got {type(value).__name__}")
    return value


def _one_line(exc: BaseException) -> str:
    return " ".join(str(exc).split()) or type(exc).__name__
