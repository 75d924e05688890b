"""Memory: the guard follows what is available, and a node short of memory never aborts a sweep."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections import namedtuple
from pathlib import Path

import pytest

from sweeper.executors import child
from sweeper.settings.config import SweepConfig

MIB = 1024 * 1024
Memory = namedtuple("Memory", "total available")


def test_the_guard_shares_available_memory_not_total(monkeypatch: pytest.MonkeyPatch) -> None:
    # 64 GiB installed, 6 GiB free (other work holds the rest): 2 workers get 80% of 6 GiB.
    monkeypatch.setattr(child.psutil, "virtual_memory", lambda: Memory(64 * 1024 * MIB, 6 * 1024 * MIB))
    assert child.memory_limit_mb(SweepConfig(), 2) == int(6 * 1024 * 0.8 / 2)
    assert child.memory_limit_mb(SweepConfig.of(memory_limit_mb=700), 2) == 700


def test_ray_memory_monitor_kills_become_oom_records_not_an_abort(tmp_path: Path) -> None:
    """Ray's memory monitor told that any use is too much kills every worker it sees: the
    sweep must still end, exit 0, with one ``oom`` record per model."""
    pytest.importorskip("ray")
    catalog = tmp_path / "c.csv"
    catalog.write_text("model_id\n" + "".join(f"org/m{i}\n" for i in range(3)))
    out = tmp_path / "out"
    env = {**os.environ, "RAY_memory_usage_threshold": "0.001", "RAY_memory_monitor_refresh_ms": "50",
           "PYTHONPATH": os.pathsep.join(sys.path)}
    args = [sys.executable, "-m", "sweeper.cli", "--catalog", str(catalog), "--executor", "ray", "--workers", "1",
            "--stages", "load", "--out", str(out), "--no-report"]
    proc = subprocess.run(args, capture_output=True, text=True, timeout=600, env=env)
    assert proc.returncode == 0, proc.stderr[-3000:]
    records = [json.loads(line) for line in (out / "records.jsonl").read_text().splitlines()]
    assert sorted(r["model_id"] for r in records) == ["org/m0", "org/m1", "org/m2"]
    assert {r["reason"]["kind"] for r in records} == {"oom"}, [r["reason"] for r in records]


def test_a_worker_holds_each_model_to_its_share_of_memory() -> None:
    # Two workers: each model's estimate is held to the worker's share (what the guard kills
    # at), not to 80% of the whole node's available memory.
    from executor_faults import budget_check, collect, refs

    from sweeper.executors.process import ProcessExecutor

    cfg = SweepConfig.of(workers=2)
    share = child.memory_limit_mb(cfg, 2)
    got = collect(ProcessExecutor(cfg), refs("a", "b"), cfg, budget_check)
    for record in got:
        assert abs(record.notes["budget_mb"] - share) < 0.25 * share, (record.notes, share)
    fixed = SweepConfig.of(workers=2, memory_limit_mb=700)
    assert {r.notes["budget_mb"] for r in collect(ProcessExecutor(fixed), refs("c"), fixed, budget_check)} == {700}
