"""Exactly-once resume: SIGKILL the driver mid-sweep, rerun the same command, every model once.

Uses the real runner and store with a test check (0.1 s a model) over the top-1000 catalog.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

DRIVER = Path(__file__).resolve().parent / "sweep_driver.py"
TOP = 40


def _lines(out: Path) -> int:
    try:
        return (out / "records.jsonl").read_bytes().count(b"\n")
    except FileNotFoundError:
        return 0


def _kill_driver_after(cmd: list[str], out: Path, records: int) -> list[psutil.Process]:
    """Start the driver, SIGKILL it (it alone) once ``records`` are stored; its descendants."""
    proc = subprocess.Popen(cmd)
    deadline = time.monotonic() + 180
    while _lines(out) < records:
        assert proc.poll() is None, "driver ended before it could be killed"
        assert time.monotonic() < deadline, "no records within 180 s"
        time.sleep(0.05)
    family = psutil.Process(proc.pid).children(recursive=True)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    return family


def _assert_workers_die(family: list[psutil.Process]) -> None:
    """Model workers end with their parent; Ray's own agents may not, so they are cleaned up."""
    workers = [p for p in family if "sweeper.executors.worker" in " ".join(_cmdline(p))]
    _, alive = psutil.wait_procs(workers, timeout=15)
    assert not alive, f"model workers outlived the driver: {alive}"
    _, leftovers = psutil.wait_procs(family, timeout=5)
    for p in leftovers:  # e.g. ray::DashboardAgent, which Ray does not end with its driver
        p.kill()


def _cmdline(p: psutil.Process) -> list[str]:
    try:
        return p.cmdline()
    except psutil.Error:
        return []


@pytest.mark.parametrize("executor,kill_points", [("process", (3, 20)), ("ray", (12,))])
def test_sigkill_driver_then_rerun_gives_each_model_exactly_once(executor, kill_points, tmp_path, top1000_csv):
    out = tmp_path / "out"
    cmd = [sys.executable, str(DRIVER), str(out), executor, str(top1000_csv), str(TOP)]
    for point in kill_points:
        _assert_workers_die(_kill_driver_after(cmd, out, point))
    subprocess.run(cmd, check=True, timeout=300)
    lines = (out / "records.jsonl").read_text().splitlines()
    keys = [json.loads(line)["key"] for line in lines if line.strip()]
    assert len(keys) == len(set(keys)) == TOP
    assert json.loads((out / "sweep.json").read_text())["resumed"] is True
