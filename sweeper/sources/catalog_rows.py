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
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import IO, Any, NamedTuple

from sweeper.errors import UsageError

SUFFIXES = (".csv", ".csv.gz", ".jsonl", ".jsonl.gz", ".ndjson", ".parquet")
# Column names accepted for each field; the first is the documented one.
_ALIASES = {"id": ("id", "model_id", "modelId"), "revision": ("revision", "sha")}


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
    except (OSError, EOFError, UnicodeDecodeError) as exc:
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
    for values in reader:
        if not any(v.strip() for v in values):
            continue  # blank lines carry no model
        record = dict(zip(names, values, strict=False))
        yield _row(record, path, f"line {reader.line_num}")


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
        yield _row(record, path, f"line {number}")


def _parquet_rows(path: Path) -> Iterator[Row]:
    import pyarrow.parquet as pq  # heavy; only Parquet catalogs pay for it

    try:
        parquet = pq.ParquetFile(path)
    except Exception as exc:  # pyarrow raises its own types for corrupt files
        raise UsageError(f"catalog {path} is not a readable Parquet file: {_one_line(exc)}") from None
    _check_id_column(path, parquet.schema_arrow.names)
    number = 0
    for batch in parquet.iter_batches(batch_size=8192):
        for record in batch.to_pylist():
            number += 1
            yield _row(record, path, f"row {number}")


def _check_id_column(path: Path, names: list[str]) -> None:
    if not any(alias in names for alias in _ALIASES["id"]):
        shown = ", ".join(names) if names else "(none)"
        raise UsageError(f"catalog {path} has no 'id' column (columns: {shown})")


def _field(record: Mapping[str, Any], name: str) -> Any:
    for alias in _ALIASES.get(name, (name,)):
        value = record.get(alias)
        if not _is_empty(value):
            return value
    return None


def _row(record: Mapping[str, Any], path: Path, where: str) -> Row:
    model_id = _text(_field(record, "id"))
    if model_id is None:
        raise UsageError(f"catalog {path} {where}: empty id")
    rank = _count(_field(record, "rank"), "rank", path, where, minimum=1)
    return Row(
        model_id=model_id,
        rank=rank,
        downloads=_count(_field(record, "downloads"), "downloads", path, where, minimum=0),
        pipeline_tag=_text(_field(record, "pipeline_tag")),
        library_name=_text(_field(record, "library_name")),
        model_type=_text(_field(record, "model_type")),
        revision=_text(_field(record, "revision")),
        config=_config(_field(record, "config"), path, where),
    )


def _is_empty(value: Any) -> bool:
    if value is None:
        return True
    if isinstance(value, float) and math.isnan(value):
        return True  # Parquet/pandas write missing numbers as NaN
    return isinstance(value, str) and not value.strip()


def _text(value: Any) -> str | None:
    return None if _is_empty(value) else str(value).strip()


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
    if value is None:
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
