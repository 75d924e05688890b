"""Each record keeps its compile seconds by stage: Dynamo's and AOT autograd's tracing (the
floor any torch.compile user pays) apart from the backend's own phases; the floor
benchmark reads them back from a sweep folder."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from sweeper.checks.checker import check_model
from sweeper.records import Status
from sweeper.settings.config import SweepConfig
from sweeper.sources.zoo import zoo_ref

ROOT = Path(__file__).resolve().parents[2]


def test_a_trnsim_record_splits_its_compile_into_dynamo_aot_autograd_and_the_backends_phases(trnsim):
    record = check_model(zoo_ref("bert", 1), SweepConfig.of(device="trnsim", stages=("load", "to_device", "compile")))
    assert record.stages["compile"].status is Status.PASS, record.reason
    phases = record.compile_phases["compile"]
    assert phases["dynamo"] > 0 and phases["aot_autograd"] > 0
    assert phases["lowering"] > 0 and "scan" in phases  # trnsim's own phases beside them
    # Every part is a share of the stage, none counted twice.
    assert sum(phases.values()) <= record.stages["compile"].seconds
    assert set(record.compile_phases) == {"compile"}  # the eager stages compile nothing


def test_a_device_without_a_phase_clock_still_gets_dynamo_and_aot_autograd_apart():
    cfg = SweepConfig.of(device="cpu", stages=("load", "compile"), compile_backend="aot_eager")
    record = check_model(zoo_ref("bert", 1), cfg)
    assert record.stages["compile"].status is Status.PASS, record.reason
    phases = record.compile_phases["compile"]
    assert phases["dynamo"] > 0 and phases["aot_autograd"] > 0
    assert sum(phases.values()) <= record.stages["compile"].seconds


def _record(key: str, *, compile_s: float, dynamo: float, aot: float, lowering: float, reused: bool = False) -> dict:
    return {"key": key, "model_id": key, "status": "pass", "seconds": compile_s + 2.0, "reused_from": "x" if reused else None,
            "stages": {"load": {"status": "pass", "seconds": 1.5}, "compile": {"status": "pass", "seconds": compile_s}},
            "compile_phases": {"compile": {"dynamo": dynamo, "aot_autograd": aot, "lowering": lowering}}}


def test_the_floor_benchmark_divides_the_checks_tracing_by_the_workers_and_leaves_reused_records_out(tmp_path):
    rows = [_record("a", compile_s=10.0, dynamo=3.0, aot=2.0, lowering=4.0),
            _record("b", compile_s=6.0, dynamo=1.0, aot=1.0, lowering=1.0),
            _record("c", compile_s=50.0, dynamo=20.0, aot=20.0, lowering=5.0, reused=True)]
    (tmp_path / "records.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    (tmp_path / "sweep.json").write_text(json.dumps({"wall_seconds": 12.0, "config": {"workers": 2}}), encoding="utf-8")
    out = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "floor.py"), str(tmp_path)],
                         capture_output=True, text=True, check=True).stdout
    # (3 + 2 + 1 + 1) s of tracing over 2 workers: 3.5 s of wall; 12 / 3.5 = 3.43x.
    assert out.splitlines()[-1] == "floor wall_s=12.0 floor_s=3.5 ratio=3.429"
    assert "compile: lowering" in out and "2 checks ran on 2 workers" in out


def test_the_floor_benchmark_says_so_for_a_folder_without_compile_phases(tmp_path):
    row = _record("a", compile_s=10.0, dynamo=0, aot=0, lowering=0)
    row.pop("compile_phases")
    (tmp_path / "records.jsonl").write_text(json.dumps(row) + "\n", encoding="utf-8")
    (tmp_path / "sweep.json").write_text(json.dumps({"wall_seconds": 12.0, "config": {}}), encoding="utf-8")
    done = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "floor.py"), str(tmp_path)], capture_output=True, text=True)
    assert done.returncode == 1 and "no compile phases" in done.stdout


