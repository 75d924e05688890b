"""Ctrl-C and SIGTERM end a real sweep cleanly: the resume line, sweep.json closed, no temp folders."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

SWEEP = [sys.executable, "-m", "sweeper.cli"]
RESUME_LINE = "interrupted; rerun the same command to resume"


def _interrupt(tmp_path: Path, executor: str, sig: int) -> tuple[subprocess.CompletedProcess, Path, Path]:
    """Start a real 20-model sweep, send ``sig`` after its first record, wait for the end."""
    out = tmp_path / "out"
    # Short: Ray puts its sockets under TMPDIR, and socket paths are limited to 107 bytes.
    tmp = Path(tempfile.mkdtemp(prefix="swi-", dir="/tmp"))
    env = {**os.environ, "TMPDIR": str(tmp), "PYTHONPATH": os.pathsep.join(sys.path)}
    # Compile (aot_eager) keeps each check to seconds: with load and forward alone the zoo's
    # tiny models finished all 20 between the first record and the signal.
    args = [*SWEEP, "--top", "20", "--source", "zoo", "--device", "cpu", "--stages", "load,forward,backward,compile",
            "--compile-backend", "aot_eager", "--executor", executor, "--workers", "1", "--out", str(out), "--no-report"]
    # A shell without job control starts background jobs with SIGINT ignored, and Python keeps
    # an ignored SIGINT ignored: the sweep gets Ctrl-C's default, as in a terminal.
    proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    records = out / "records.jsonl"
    deadline = time.monotonic() + 300
    while proc.poll() is None and time.monotonic() < deadline:
        if records.exists() and records.read_text().count("\n") >= 1:
            break
        time.sleep(0.2)
    if proc.poll() is not None:
        pytest.fail(f"the sweep ended before it could be interrupted: {proc.communicate()[1][-2000:]}")
    proc.send_signal(sig)
    stdout, stderr = proc.communicate(timeout=120)
    return subprocess.CompletedProcess(args, proc.returncode, stdout, stderr), out, tmp


def _assert_clean(result: subprocess.CompletedProcess, out: Path, tmp: Path) -> None:
    assert result.returncode == 130, result.stderr
    assert result.stderr.rstrip().splitlines()[-1] == f"sweep: error: {RESUME_LINE}", result.stderr
    meta = json.loads((out / "sweep.json").read_text())
    assert meta.get("ended") and meta.get("interrupted") is True, meta
    left = sorted(p.name for p in tmp.iterdir() if p.name.startswith("sweeper-"))
    shutil.rmtree(tmp, ignore_errors=True)
    assert left == [], f"worker temp folders left behind: {left}"
    lines = [json.loads(line) for line in (out / "records.jsonl").read_text().splitlines() if line.strip()]
    assert 1 <= len(lines) < 20 and len({r["key"] for r in lines}) == len(lines)


def test_ctrl_c_ends_a_process_sweep_cleanly(tmp_path: Path) -> None:
    _assert_clean(*_interrupt(tmp_path, "process", signal.SIGINT))


def test_sigterm_ends_a_process_sweep_cleanly(tmp_path: Path) -> None:
    _assert_clean(*_interrupt(tmp_path, "process", signal.SIGTERM))


def test_sigterm_ends_a_ray_sweep_cleanly(tmp_path: Path) -> None:
    pytest.importorskip("ray")
    _assert_clean(*_interrupt(tmp_path, "ray", signal.SIGTERM))
