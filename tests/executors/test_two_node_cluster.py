"""A real two-node Ray cluster on this machine: attach with --address, lose a node mid-sweep.

The cluster has token authentication on (``ray start`` found its token); the sweep sets
no Ray variable and finds the same token, and a wrong token is refused in one line.

Slow (two ``ray start`` nodes, a real sweep): ``pytest -m slow``. The cluster comes from
``ray_cluster.two_node_cluster``, which ends every process it started by pid.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from ray_cluster import REPO, connect_without_address, processes, raylets, two_node_cluster

MODELS = 10

pytestmark = pytest.mark.slow


@pytest.fixture
def cluster():
    """Head plus a second node, token authentication on; every process ended after."""
    with two_node_cluster() as local:
        yield local


def _refused(address: str, env: dict[str, str], out: Path) -> tuple[int, str, float]:
    args = [sys.executable, "-m", "sweeper.cli", "--address", address, "--source", "zoo", "--top", "2",
            "--device", "cpu", "--stages", "load", "--out", str(out), "--no-report"]
    started = time.monotonic()
    done = subprocess.run(args, cwd=REPO, env=env, capture_output=True, text=True, timeout=120)
    return done.returncode, done.stderr, time.monotonic() - started


def test_sweep_on_two_nodes_survives_losing_one(cluster, tmp_path: Path) -> None:
    address, temp, env = cluster.address, cluster.temp, cluster.env
    nodes = raylets(temp)
    assert len(nodes) == 2, [p.info["cmdline"][:2] for p in processes(temp)]
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
    nodes[-1].send_signal(signal.SIGKILL)  # the second node's raylet: its actors are lost
    stdout, stderr = proc.communicate(timeout=600)
    wall = time.monotonic() - started
    assert proc.returncode == 0, stderr[-3000:]
    assert "ray: attached to 127.0.0.1:" in stderr and "2 node(s), 2 CPUs" in stderr, stderr[:2000]
    lines = [json.loads(line) for line in records.read_text().splitlines() if line.strip()]
    keys = [r["key"] for r in lines]
    assert len(keys) == MODELS and len(set(keys)) == MODELS, keys
    # The token authenticated the driver and the workers, and went nowhere else.
    leaks = [p.name for p in out.rglob("*") if p.is_file() and cluster.token.encode() in p.read_bytes()]
    assert cluster.token not in stdout + stderr and leaks == [], leaks
    # A wrong token, through the GCS and through Ray Client: one line naming authentication, exit 2.
    for where in (address, cluster.client):
        code, said, seconds = _refused(where, {**env, "RAY_AUTH_TOKEN": "0" * 64}, tmp_path / f"refused-{where[-5:]}")
        assert code == 2 and "authentication failed: the cluster refused the token from RAY_AUTH_TOKEN" in said, said[-2000:]
        assert seconds < 15 and "done:" not in said, (seconds, said[-2000:])
    # Beside this live head, recorded where `ray start` records it: a sweep without
    # --address still starts its own Ray (plain ray.init() would join and refuse num_cpus).
    (Path(temp) / "ray").mkdir(exist_ok=True)
    (Path(temp) / "ray" / "ray_current_cluster").write_text(address)
    local = connect_without_address(env)
    assert local.returncode == 0 and "ray: started a private local instance" in local.stderr, local.stderr[-3000:]
    print(f"two-node sweep: {MODELS} models, 2 nodes, node killed after {killed_at} records, "
          f"{len(lines)} records after, wall {wall:.0f}s, statuses {sorted({r['status'] for r in lines})}")
