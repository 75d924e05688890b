"""The catalog source: formats, rank order, one-line errors, and the real shared catalogs."""

from __future__ import annotations

import csv
import gzip
import itertools
import json
import os
from pathlib import Path
from typing import Any

import pytest

from sweeper.settings.config import SweepConfig
from sweeper.settings.errors import UsageError
from sweeper.sources.base import get_source
from sweeper.sources.catalog import CatalogSource

ROWS: list[dict[str, Any]] = [
    {"rank": 2, "id": "org/b", "downloads": 50, "pipeline_tag": "", "library_name": "transformers",
     "model_type": "", "sha": "b" * 40, "config": {"model_type": "gpt2", "n_layer": 2}},
    {"rank": 1, "id": "org/a", "downloads": 90, "pipeline_tag": "fill-mask", "library_name": "",
     "model_type": "bert", "sha": "", "config": None},
    {"rank": 3, "id": "c", "downloads": 7, "pipeline_tag": "text-generation", "library_name": "timm",
     "model_type": "", "sha": "", "config": None},
]


def write(path: Path, rows: list[dict[str, Any]]) -> Path:
    """Write ``rows`` in the format the suffix names (config as JSON text in CSV)."""
    name = path.name
    if name.endswith(".parquet"):
        import pyarrow as pa
        import pyarrow.parquet as pq

        table = [{**r, "config": json.dumps(r["config"]) if r.get("config") else None} for r in rows]
        pq.write_table(pa.Table.from_pylist(table), path)
        return path
    opener = gzip.open if name.endswith(".gz") else open
    with opener(path, "wt", encoding="utf-8", newline="") as handle:
        if ".csv" in name:
            writer = csv.DictWriter(handle, fieldnames=list(rows[0]))
            writer.writeheader()
            for r in rows:
                if "config" in r:
                    r = {**r, "config": json.dumps(r["config"]) if r["config"] else ""}
                writer.writerow(r)
        else:
            for r in rows:
                handle.write(json.dumps(r) + "\n")
    return path


@pytest.mark.parametrize("suffix", [".csv", ".csv.gz", ".jsonl", ".jsonl.gz", ".parquet"])
def test_formats_give_the_same_refs_in_rank_order(tmp_path: Path, suffix: str) -> None:
    refs = list(CatalogSource(write(tmp_path / f"cat{suffix}", ROWS)).refs())
    assert [(r.model_id, r.rank) for r in refs] == [("org/a", 1), ("org/b", 2), ("c", 3)]
    a, b, c = refs
    assert (a.downloads, a.pipeline_tag, a.library_name, a.model_type) == (90, "fill-mask", None, "bert")
    assert a.revision is None and a.config is None and a.source == "catalog"
    assert b.revision == "b" * 40 and b.config == {"model_type": "gpt2", "n_layer": 2}
    assert b.model_type == "gpt2"  # taken from the config when the column is empty
    assert b.pipeline_tag is None  # empty strings become None
    assert c.library_name == "timm"


def test_downloads_order_when_no_rank_ties_keep_file_order(tmp_path: Path) -> None:
    rows = [{"id": "x", "downloads": "5"}, {"id": "y", "downloads": "9"}, {"id": "z", "downloads": "5.0"},
            {"id": "w", "downloads": ""}]
    refs = list(CatalogSource(write(tmp_path / "d.csv", rows)).refs())
    assert [(r.model_id, r.rank) for r in refs] == [("y", 1), ("x", 2), ("z", 3), ("w", 4)]


def test_file_order_when_no_rank_or_downloads_and_duplicates_once(tmp_path: Path) -> None:
    rows = [{"id": "m2"}, {"id": "m1"}, {"id": "m2"}, {"id": "m3"}]
    refs = list(CatalogSource(write(tmp_path / "f.jsonl", rows)).refs())
    assert [r.model_id for r in refs] == ["m2", "m1", "m3"]
    assert [r.rank for r in refs] == [1, 2, 4]  # a rank is a position in the listing


def test_unranked_rows_follow_ranked_rows(tmp_path: Path) -> None:
    rows = [{"id": "u", "rank": ""}, {"id": "r2", "rank": "2"}, {"id": "r1", "rank": "1"}]
    refs = list(CatalogSource(write(tmp_path / "r.csv", rows)).refs())
    assert [r.model_id for r in refs] == ["r1", "r2", "u"]


def _error(path: Path) -> str:
    with pytest.raises(UsageError) as info:
        list(CatalogSource(path).refs())
    message = str(info.value)
    assert "\n" not in message
    return message


def test_missing_file_and_unknown_extension(tmp_path: Path) -> None:
    assert "catalog not found" in _error(tmp_path / "nope.csv")
    (tmp_path / "cat.xlsx").write_text("id\nx\n")
    assert "unknown extension" in _error(tmp_path / "cat.xlsx")


def test_no_id_column(tmp_path: Path) -> None:
    (tmp_path / "noid.csv").write_text("name,downloads\nx,1\n")
    message = _error(tmp_path / "noid.csv")
    assert "no 'id' column" in message and "name, downloads" in message


def test_malformed_json_line_is_named(tmp_path: Path) -> None:
    (tmp_path / "bad.jsonl").write_text('{"id": "a"}\n\n{"id": "b",,}\n')
    assert "line 3: malformed JSON" in _error(tmp_path / "bad.jsonl")


@pytest.mark.parametrize("content", ["", "id,downloads\n", "id\n\n\n"])
def test_empty_catalog(tmp_path: Path, content: str) -> None:
    (tmp_path / "empty.csv").write_text(content)
    assert "is empty" in _error(tmp_path / "empty.csv")


def test_empty_jsonl_catalog(tmp_path: Path) -> None:
    (tmp_path / "empty.jsonl").write_text("\n")
    assert "is empty" in _error(tmp_path / "empty.jsonl")


@pytest.mark.parametrize(
    ("column", "value"), [("rank", "first"), ("rank", "0"), ("downloads", "-3"), ("downloads", "1.5")]
)
def test_bad_numbers_name_the_line(tmp_path: Path, column: str, value: str) -> None:
    (tmp_path / "n.csv").write_text(f"id,{column}\nok,1\nbad,{value}\n")
    message = _error(tmp_path / "n.csv")
    assert f"line 3: bad {column} value '{value}'" in message


def test_bad_config_and_empty_id(tmp_path: Path) -> None:
    (tmp_path / "c.csv").write_text('id,config\na,"{not json"\n')
    assert "line 2: config is not valid JSON" in _error(tmp_path / "c.csv")
    (tmp_path / "l.jsonl").write_text('{"id": "a", "config": [1]}\n')
    assert "line 1: config must be a JSON object" in _error(tmp_path / "l.jsonl")
    (tmp_path / "e.csv").write_text("id,rank\n ,1\n")
    assert "line 2: empty id" in _error(tmp_path / "e.csv")


def test_describe_dates_from_name_or_mtime(tmp_path: Path) -> None:
    named = CatalogSource(write(tmp_path / "hub-2025-03-21.jsonl", ROWS)).describe()
    assert named == {"name": "catalog", "path": str(tmp_path / "hub-2025-03-21.jsonl"), "rows": "3",
                     "snapshot_date": "2025-03-21"}
    plain = write(tmp_path / "mine.csv", ROWS)
    os.utime(plain, (1_700_000_000, 1_700_000_000))  # 2023-11-14 UTC
    assert CatalogSource(plain).describe()["snapshot_date"] == "2023-11-14"


def test_registered_as_catalog(tmp_path: Path) -> None:
    path = write(tmp_path / "cat.csv", ROWS)
    source = get_source(SweepConfig.of(source="catalog", catalog=str(path)))
    assert [r.model_id for r in source.refs()] == ["org/a", "org/b", "c"]


def test_real_top1000_lists_999_in_rank_order(top1000_csv: Path) -> None:
    refs = list(CatalogSource(top1000_csv).refs())
    assert len(refs) == 999
    assert [r.rank for r in refs] == list(range(1, 1000))
    assert refs[0].model_id == "FacebookAI/xlm-roberta-large" and refs[0].model_type == "xlm-roberta"
    assert all(a.downloads >= b.downloads for a, b in itertools.pairwise(refs))  # type: ignore[operator]
    assert sum(r.library_name is None for r in refs) < 999 and all(r.library_name != "" for r in refs)


def test_large_2022_listing_parses_in_download_order(hub_2022_csv: Path) -> None:
    # Its speed is a figure of benchmarks/report_scale.py (catalog_listing), not a test.
    source = CatalogSource(hub_2022_csv)
    refs = list(source.refs())
    assert len(refs) > 55_000 and source.describe()["snapshot_date"] == "2022-07"
    assert refs[0].model_id == "bert-base-uncased" and refs[0].revision and len(refs[0].revision) == 40
    assert all(a.downloads >= b.downloads for a, b in itertools.pairwise(refs))  # type: ignore[operator]
