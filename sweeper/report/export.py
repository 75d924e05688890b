"""records.parquet: one row per model, stages flattened, nested parts as lists."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from sweeper.report.load import SweepData


def _lists(long: pd.DataFrame, keys: pd.Series, cols: list[str]) -> list[list]:
    """For each key in order, the list of its rows of ``long`` (dicts, or scalars for one
    column); missing values become None."""
    per_key: dict[str, list] = {}
    columns = [long[c].tolist() for c in cols]
    for key, *values in zip(long["key"].tolist(), *columns):
        values = [None if isinstance(v, float) and v != v else v for v in values]
        item = values[0] if len(cols) == 1 else dict(zip(cols, values))
        per_key.setdefault(key, []).append(item)
    return [per_key.get(k, []) for k in keys]


def to_arrow(data: SweepData) -> pa.Table:
    """The models frame plus blockers, fallback ops, graph breaks and compile problems."""
    m = data.models
    table = pa.Table.from_pandas(m, preserve_index=False)
    blocker_type = pa.list_(pa.struct([("kind", pa.string()), ("op", pa.string()), ("message", pa.string())]))
    extra = {
        "blockers": (_lists(data.blockers, m["key"], ["kind", "op", "message"]), blocker_type),
        "fallback_ops": (
            _lists(data.fallbacks, m["key"], ["op", "calls"]),
            pa.list_(pa.struct([("op", pa.string()), ("calls", pa.int64())])),
        ),
        "graph_break_reasons": (_lists(data.breaks, m["key"], ["reason"]), pa.list_(pa.string())),
        "compile_problems": (_lists(data.problems, m["key"], ["problem"]), pa.list_(pa.string())),
    }
    for name, (values, typ) in extra.items():
        table = table.append_column(name, pa.array(values, type=typ))
    return table.replace_schema_metadata(None)


def write_parquet(data: SweepData, path: Path) -> None:
    """Write the records table (no pandas index, no creation metadata)."""
    pq.write_table(to_arrow(data), path, compression="zstd")
