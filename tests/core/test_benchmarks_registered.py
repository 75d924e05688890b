"""``make bench`` knows every script in benchmarks/, and the order replay reads a sweep's records."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"


def _run_all() -> object:
    spec = importlib.util.spec_from_file_location("run_all", BENCHMARKS / "run_all.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_every_benchmark_script_is_run_by_make_bench_or_named_a_record_tool() -> None:
    run_all = _run_all()
    present = {p.stem for p in BENCHMARKS.glob("*.py")} - {"run_all"}
    assert present == set(run_all.BENCHMARKS) | set(run_all.RECORD_TOOLS)


def test_check_order_replays_a_sweeps_checks_in_three_orders(tmp_path: Path) -> None:
    rows = [(1, "org/bert", "fill-mask", "transformers", 2.0), (2, "org/llama", "text-generation", "transformers", 2.0),
            (3, "org/sd", "text-to-image", "diffusers", 10.0), (4, "org/copy", "fill-mask", "transformers", 0.0)]
    records = tmp_path / "records.jsonl"
    records.write_text("".join(json.dumps({
        "key": model_id, "model_id": model_id, "rank": rank, "pipeline_tag": tag, "library_name": library,
        "seconds": seconds, "reused_from": "org/bert" if model_id == "org/copy" else None,
    }) + "\n" for rank, model_id, tag, library, seconds in rows))
    proc = subprocess.run([sys.executable, str(BENCHMARKS / "check_order.py"), "--records", str(records), "--overhead", "0"],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    # Rank order: bert and llama run side by side, then sd: 12 s. Longest first: sd beside both: 10 s.
    assert "check_order rank_s=12" in proc.stdout
    assert "check_order longest_expected_first_s=10" in proc.stdout
    assert "check_order longest_recorded_first_s=10" in proc.stdout
    assert proc.stdout.startswith("3 checks, 14 s of checks, 2 workers")
