"""A real sweep end to end: zoo models on the CPU, records, report, resume after SIGKILL."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

SWEEP = [sys.executable, "-m", "sweeper.cli"]
ZOO_CPU = ["--source", "zoo", "--device", "cpu"]
FAST = [*ZOO_CPU, "--stages", "load,to_device,forward,backward"]


def _lines(out: Path) -> list[dict]:
    path = out / "records.jsonl"
    if not path.exists():
        return []
    # Only whole lines: a killed sweep may leave a torn last line, which the store repairs.
    text = path.read_text()
    whole = text[: text.rfind("\n") + 1]
    return [json.loads(ln) for ln in whole.splitlines() if ln.strip()]


def test_sweep_writes_records_and_report_then_resumes(tmp_path):
    out = tmp_path / "run"
    args = [*SWEEP, "--top", "3", *FAST, "--executor", "process", "--out", str(out)]
    proc = subprocess.run(args, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr
    assert "source: zoo" in proc.stderr
    records = _lines(out)
    assert len(records) == 3
    assert {r["model_id"] for r in records} >= {"google-bert/bert-base-uncased"}
    assert all(r["status"] == "pass" for r in records), [r["reason"] for r in records]
    assert all(set(r["stages"]) == {"load", "to_device", "forward", "backward"} for r in records)
    meta = json.loads((out / "sweep.json").read_text())
    assert meta["source"]["name"] == "zoo" and meta["total"] == 3 and "ended" in meta
    report = (out / "report.md").read_text()
    assert "**Device pass rate: 100.0%**" in report and "[index.html](index.html)" in report
    assert '"google-bert/bert-base-uncased"' in (out / "index.html").read_text()  # every model is on the page

    again = subprocess.run(args, capture_output=True, text=True, timeout=600)
    assert again.returncode == 0, again.stderr
    assert "3 already recorded" in again.stderr
    assert len(_lines(out)) == 3
    assert json.loads((out / "sweep.json").read_text())["sweep_id"] == meta["sweep_id"]


def test_sigkill_half_way_then_rerun_records_each_model_once(tmp_path):
    # Warm workers get through a tiny model in tens of milliseconds, so the sweep is
    # long (40 models) and killed at its first record: the kill must land mid-sweep
    # however fast the machine is.
    out = tmp_path / "killed"
    top = 40
    args = [*SWEEP, "--top", str(top), *FAST, "--executor", "process", "--out", str(out), "--no-report"]
    proc = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    deadline = time.monotonic() + 300
    while not _lines(out) and time.monotonic() < deadline and proc.poll() is None:
        time.sleep(0.02)
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    done_before = len(_lines(out))
    assert 0 < done_before < top
    rerun = subprocess.run(args, capture_output=True, text=True, timeout=600)
    assert rerun.returncode == 0, rerun.stderr
    assert f"{done_before} already recorded" in rerun.stderr
    keys = [r["key"] for r in _lines(out)]
    assert len(keys) == top and len(set(keys)) == top
