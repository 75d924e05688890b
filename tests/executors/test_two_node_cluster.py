"""A real two-node Ray cluster on this machine: attach with --address, lose a node mid-sweep.

Slow (two ``ray start`` nodes, a real sweep): ``pytest -m slow``. Every process the test
starts is found by its temp folder and ended by pid, never by name.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import psutil
import pytest

REPO = Path(__file__).resolve().parents[2]
RAY = Path(sys.executable).with_name("ray")
MODELS = 10

pytestmark = pytest.mark.slow


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _ours(temp: str) -> list[psutil.Process]:
    found = []
    for proc in psutil.process_iter(["cmdline"]):
        try:
            if any(temp in part for part in proc.info["cmdline"] or []):
                found.append(proc)
        except (psutil.Error, TypeError):
            continue
    return found


def _raylets(temp: str) -> list[psutil.Process]:
    procs = [p for p in _ours(temp) if "raylet" in Path((p.info["cmdline"] or [""])[0]).name]
    return sorted(procs, key=lambda p: p.create_time())


@pytest.fixture
def cluster(tmp_path: Path):
    """Head (1 CPU) plus a second node (1 CPU, its own resource); yields (address, temp, env)."""
    if not RAY.exists():
        pytest.skip("the ray CLI is not installed beside this Python")
    temp = tempfile.mkdtemp(prefix="rc-", dir="/tmp")  # short: socket paths are limited
    port = _free_port()
    # HOME too: a token in ~/.ray/auth_token (from another Ray on this machine) would make
    # the head demand it from the second node.
    env = {**os.environ, "PYTHONPATH": str(REPO), "RAY_USAGE_STATS_ENABLED": "0", "TMPDIR": temp, "HOME": temp}
    common = ["--num-cpus=1", "--node-ip-address=127.0.0.1", "--disable-usage-stats"]
    try:
        subprocess.run([str(RAY), "start", "--head", f"--port={port}", f"--temp-dir={temp}",
                        "--include-dashboard=false", *common], env=env, check=True, capture_output=True, timeout=180)
        subprocess.run([str(RAY), "start", f"--address=127.0.0.1:{port}", '--resources={"second_node": 1}', *common],
                       env=env, check=True, capture_output=True, timeout=180)
        yield f"127.0.0.1:{port}", temp, env
    finally:
        for proc in _ours(temp):
            try:
                proc.kill()
            except psutil.Error:
                pass
        shutil.rmtree(temp, ignore_errors=True)


def test_sweep_on_two_nodes_survives_losing_one(cluster, tmp_path: Path) -> None:
    address, temp, env = cluster
    raylets = _raylets(temp)
    assert len(raylets) == 2, [p.info["cmdline"][:2] for p in _ours(temp)]
    out = tmp_path / "out"
    args = [sys.executable, "-m", "sweeper.cli", "--address", address, "--source", "zoo", "--top", str(MODELS),
            "--device", "cpu", "--stages", "load,forward", "--out", str(out), "--no-report", "--retries", "3"]
    started = time.monotonic()
    proc = subprocess.Popen(args, cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    records = out / "records.jsonl"
    deadline = time.monotonic() + 400
    while proc.poll() is None and time.monotonic() < deadline:
        if records.exists() and records.read_text().count("\n") >= 2:
            break
        time.sleep(0.2)
    killed_at = len(records.read_text().splitlines()) if records.exists() else 0
    raylets[-1].send_signal(signal.SIGKILL)  # the second node's raylet: its actors are lost
    stdout, stderr = proc.communicate(timeout=600)
    wall = time.monotonic() - started
    assert proc.returncode == 0, stderr[-3000:]
    assert "ray: attached to 127.0.0.1:" in stderr and "2 node(s), 2 CPUs" in stderr, stderr[:2000]
    lines = [json.loads(line) for line in records.read_text().splitlines() if line.strip()]
    keys = [r["key"] for r in lines]
    assert len(keys) == MODELS and len(set(keys)) == MODELS, keys
    print(f"two-node sweep: {MODELS} models, 2 nodes, node killed after {killed_at} records, "
          f"{len(lines)} records after, wall {wall:.0f}s, statuses {sorted({r['status'] for r in lines})}")
