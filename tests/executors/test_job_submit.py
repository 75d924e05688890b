"""``configs/cluster/job-submit.sh`` submits a sweep that runs on a real two-node cluster.

Slow (two ``ray start`` nodes with the dashboard's jobs API, a real job): ``pytest -m slow``.
The script runs as a user runs it: from the repository root, which it ships as the job's
working_dir, against a cluster with token authentication on, with the token where `ray start`
left it (``~/.ray/auth_token``) and no Ray variable set; only its environment settings point it at the loopback cluster and a small zoo
sweep on cpu. Nothing is pip-installed: the nodes' own environment runs the job.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from ray_cluster import REPO, two_node_cluster

SCRIPT = REPO / "configs" / "cluster" / "job-submit.sh"
MODELS = 4
JOB_TIMEOUT_S = 600

pytestmark = pytest.mark.slow


@pytest.fixture
def cluster():
    """Head with the jobs API plus a second node; every process ended after the test."""
    with two_node_cluster(dashboard=True) as local:
        yield local


def test_job_submit_script_sweeps_on_the_cluster(cluster, tmp_path: Path) -> None:
    out = tmp_path / "out"  # the job runs on the head, which is this machine
    job_id = f"sweep-test-{tmp_path.name}"
    env = {**cluster.env, "RAY_ADDRESS": cluster.dashboard, "SWEEP_DEVICE": "cpu", "SWEEP_TOP": str(MODELS),
           "SWEEP_TIMEOUT": "120", "SWEEP_OUT": str(out), "SWEEP_JOB_ID": job_id,
           "SWEEP_EXTRA": "--source zoo --stages load,forward --no-report"}
    done = subprocess.run(["bash", str(SCRIPT)], cwd=REPO, env=env, capture_output=True, text=True, timeout=JOB_TIMEOUT_S)
    log = done.stdout + done.stderr
    # `ray job submit` waits for the job and exits 1 when it failed.
    assert done.returncode == 0 and f"Job '{job_id}' succeeded" in log, log[-4000:]
    # The sweep attached to the cluster it was submitted to, not a Ray of its own.
    assert "ray: attached to auto" in log and "2 node(s), 2 CPUs" in log, log[-4000:]
    records = [json.loads(line) for line in (out / "records.jsonl").read_text().splitlines() if line.strip()]
    keys = [r["key"] for r in records]
    assert len(keys) == MODELS and len(set(keys)) == MODELS, keys
    assert sorted(r["rank"] for r in records) == list(range(1, MODELS + 1))
    assert {r["device"] for r in records} == {"cpu"} and {r["status"] for r in records} <= {"pass", "fail"}, records
    # Submitted to a cluster with token authentication, the token going nowhere it is shown.
    leaks = [p.name for p in out.rglob("*") if p.is_file() and cluster.token.encode() in p.read_bytes()]
    assert cluster.token not in log and leaks == [], leaks
