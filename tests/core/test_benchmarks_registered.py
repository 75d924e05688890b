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


def test_numerics_verdicts_counts_what_verdicts_rest_on(tmp_path: Path) -> None:
    tf32 = {"float32_matmul": "tf32", "float32_conv": "tf32"}
    records = [
        {"model_id": "org/mt5", "precision": tf32, "notes": {"backward_mode": "train"},
         "numerics": {"reference_gradients": {"default_loss_max": 9e-42, "loss": "projection", "max": 16.6}}},
        {"model_id": "org/vits", "precision": tf32,
         "numerics": {"reference_gradients": {"default_loss_max": 0.3, "loss": "default", "max": 0.3},
                      "random_ops": [{"op": "aten::randn_like", "module": "VitsModel", "stage": "forward"}],
                      "random": {"forward": {"compared": "device run fed the CPU's random draws"}},
                      "within_precision": {"within": True}}},
        {"model_id": "org/copy", "reused_from": "org/vits", "numerics": {}},
        {"model_id": "org/bad", "precision": tf32, "blockers": [{"kind": "numerics", "origin": "device"}],
         "numerics": {"noise": {"float64": {"within": False, "within_exact": False}}}},
    ]
    path = tmp_path / "records.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    proc = subprocess.run([sys.executable, str(BENCHMARKS / "numerics_verdicts.py"), "--records", str(path)],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    lines = set(proc.stdout.splitlines())
    assert {"checks: 3", "math tf32/tf32: 3", "dead under the default loss: 1", "made alive by the projection loss: 1",
            "draw random numbers: 1", "forward: fed the CPU's draws: 1", "cleared: within_precision: 1",
            "numerics blocker, origin device: past exact float32's bound too: 1"} <= lines, proc.stdout
