"""configs/cluster/nightly.sh run twice against a real local Ray cluster: the second night
re-runs no check (the cache answers every one), writes the history over both nights, and
gates on the expected results written from the first.

Slow (a cluster starts); ``ray_cluster.two_node_cluster`` ends every process it started.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from ray_cluster import REPO, two_node_cluster

pytestmark = pytest.mark.slow
NIGHTLY = REPO / "configs" / "cluster" / "nightly.sh"


def _night(env: dict[str, str], night: str) -> subprocess.CompletedProcess:
    return subprocess.run(["bash", str(NIGHTLY)], cwd=REPO, env={**env, "SWEEP_NIGHT": night},
                          capture_output=True, text=True, timeout=900)


def test_two_nights_on_ray_reuse_every_check_write_history_and_gate(tmp_path: Path) -> None:
    results = tmp_path / "results"
    expected = tmp_path / "expected.csv"
    with two_node_cluster() as cluster:
        env = {**cluster.env, "RAY_ADDRESS": cluster.address, "SWEEP_RESULTS": str(results), "SWEEP_DEVICE": "cpu",
               "SWEEP_TOP": "2", "SWEEP_TIMEOUT": "300",
               "SWEEP_EXTRA": "--source zoo --stages load,to_device,forward --num-cpus 1"}
        first = _night(env, "2000-01-01")
        assert first.returncode == 0, first.stderr
        one = results / "cpu" / "2000-01-01"
        made = subprocess.run([str(Path(REPO) / ".venv" / "bin" / "sweep"), "expect", str(one), "--write", str(expected)],
                              cwd=REPO, env=env, capture_output=True, text=True, timeout=120)
        assert made.returncode == 0, made.stderr
        second = _night({**env, "SWEEP_EXPECTED": str(expected)}, "2000-01-02")
    assert second.returncode == 0, second.stderr
    two = results / "cpu" / "2000-01-02"
    records = [json.loads(line) for line in (two / "records.jsonl").read_text().splitlines()]
    assert len(records) == 2 and all(r["reused_from"] for r in records)  # no check ran again
    cache = json.loads((two / "sweep.json").read_text())["cache"]
    assert (cache["hits"], cache["writes"]) == (2, 0)
    history = (two / "history.md").read_text()
    assert "2 nights, oldest first: `2000-01-01`" in history and "### 2000-01-02 (since 2000-01-01)" in history
    assert (two / "history.html").is_file() and (two / "diff.md").is_file()
    assert (two / "expected.txt").read_text() == f"every model as expected ({expected})\n"
    assert f"every model as expected ({expected})" in second.stdout
