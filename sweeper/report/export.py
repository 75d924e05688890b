"""records.parquet: one row per model, stages flattened, nested parts as lists."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from sweeper.report.load import SweepData

NESTED_TYPES = {
    "blockers": pa.list_(pa.struct([("kind", pa.string()), ("op", pa.string()), ("message", pa.string()),
                                    ("origin", pa.string()), ("stage", pa.string())])),
    "fallback_ops": pa.list_(pa.struct([("op", pa.string()), ("calls", pa.int64())])),
    "graph_break_reasons": pa.list_(pa.string()),
    "compile_problems": pa.list_(pa.string()),
}


def to_arrow(data: SweepData) -> pa.Table:
    """The models frame plus blockers, fallback ops, graph breaks and compile problems."""
    table = pa.Table.from_pandas(data.models, preserve_index=False)
    for name, typ in NESTED_TYPES.items():
        values = data.nested.get(name) or [[] for _ in range(len(data.models))]
        table = table.append_column(name, pa.array(values, type=typ))
    return table.replace_schema_metadata(None)


def write_parquet(data: SweepData, path: Path) -> None:
    """Write the records table (no pandas index, no creation metadata)."""
    pq.write_table(to_arrow(data), path, compression="zstd")
