"""A reused sweep and a ``--no-reuse`` sweep of the same real Hub models agree record by record."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from sweeper.runner import run_sweep
from sweeper.settings.config import build_config

# What differs between two runs of the same check: who the model is, and how long it took.
IDENTITY = {"sweep_id", "model_id", "key", "rank", "downloads", "revision", "pipeline_tag", "library_name", "repro",
            "seconds", "compile_phases", "reused_from", "peak_memory_bytes"}  # fmt: skip
RUN_NOTES = {"infra_retries", "worker_recycled", "cached_from_sweep"}
# Two groups of two (one builds a model, one stops at its library) and one model alone.
HANDFUL = ["FacebookAI/xlm-roberta-large", "FacebookAI/xlm-roberta-base", "Bingsu/adetailer",
           "Bingsu/yolo-world-mirror", "google-bert/bert-base-uncased"]  # fmt: skip


def _records(out: Path) -> dict[str, dict]:
    lines = (out / "records.jsonl").read_text().splitlines()
    return {r["key"]: r for r in map(json.loads, lines)}


def _outcome(record: dict) -> dict:
    """A record without identity and timings (and with messages naming the model as X)."""
    text = json.dumps({k: v for k, v in record.items() if k not in IDENTITY}).replace(record["model_id"], "X")
    text = re.sub(r"0x[0-9a-f]{6,}", "0x?", text)  # object addresses in graph-break reasons
    kept = json.loads(text)
    kept["stages"] = {k: {**v, "seconds": None} for k, v in kept["stages"].items()}
    kept["notes"] = {k: v for k, v in kept["notes"].items() if k not in RUN_NOTES}
    return kept


def _assert_same_outcomes(reused: dict[str, dict], alone: dict[str, dict]) -> None:
    assert sorted(reused) == sorted(alone)
    differ = []
    for key in alone:
        one, two = _outcome(reused[key]), _outcome(alone[key])
        differ += [(key, f, one.get(f), two.get(f)) for f in sorted(set(one) | set(two)) if one.get(f) != two.get(f)]
    assert differ == []
    assert all(r["reused_from"] is None for r in alone.values())


def test_a_handful_reused_and_alone_agree(tmp_path, top1000_csv):
    base = {"device": "cpu", "source": "catalog", "catalog": str(top1000_csv), "include": tuple(HANDFUL),
            "executor": "inline", "stages": ("load", "forward")}  # fmt: skip
    run_sweep(build_config({**base, "out": str(tmp_path / "reused")}), quiet=True, write_report=False)
    cfg_alone = build_config({**base, "out": str(tmp_path / "alone")}).replace(reuse=False)
    run_sweep(cfg_alone, quiet=True, write_report=False)
    reused, alone = _records(tmp_path / "reused"), _records(tmp_path / "alone")
    assert len(reused) == len(HANDFUL)
    assert sorted((r["model_id"], r["reused_from"]) for r in reused.values() if r["reused_from"]) == [
        ("Bingsu/yolo-world-mirror", "Bingsu/adetailer"),
        ("FacebookAI/xlm-roberta-base", "FacebookAI/xlm-roberta-large"),
    ]
    _assert_same_outcomes(reused, alone)


def _sweep(out: Path, catalog: Path, *extra: str) -> subprocess.CompletedProcess:
    cmd = [sys.executable, "-m", "sweeper.cli", "--top", "40", "--device", "cpu", "--catalog", str(catalog),
           "--compile-backend", "aot_eager", "--executor", "process", "--workers", "2", "--out", str(out), *extra]  # fmt: skip
    return subprocess.run(cmd, capture_output=True, text=True, timeout=1800)


@pytest.mark.slow
def test_forty_models_reused_and_alone_agree_and_the_report_counts_distinct_checks(tmp_path, top1000_csv):
    reused = _sweep(tmp_path / "reused", top1000_csv)
    assert reused.returncode == 0, reused.stderr[-2000:]
    alone = _sweep(tmp_path / "alone", top1000_csv, "--no-reuse")
    assert alone.returncode == 0, alone.stderr[-2000:]
    records = _records(tmp_path / "reused")
    _assert_same_outcomes(records, _records(tmp_path / "alone"))
    run = sum(r["reused_from"] is None for r in records.values())
    assert run < 40
    summary = json.loads((tmp_path / "reused" / "summary.json").read_text())
    assert summary["checks"] == f"40 models, {run} distinct checks"
    assert f"40 models, {run} distinct checks" in (tmp_path / "reused" / "report.md").read_text()
