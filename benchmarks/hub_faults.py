"""A Hub sweep through a flaky Hub: wall time and requests against the same sweep without faults.

Serves ``--models`` small BERT repos from the loopback Hub (``tests/hub_server.py``) and runs
the real CLI on them twice, in a fresh process each time:

    sweep --source hub --top N --weights tiny --device cpu --stages load --executor inline

once with a clean Hub and once with a Hub that answers ``--faults`` of all requests (retries
included) with 429 (``Retry-After: 1``) or 503, half each. The sweep keeps its default
retry policy; ``--hub-rpm`` is raised so the node-wide rate limit does not hide the cost of
the faults (loopback answers in a millisecond). Every model must end with one record in
both runs, with the same statuses.

    nice -n 10 .venv/bin/python benchmarks/hub_faults.py [--models 200] [--faults 0.2]

Last line: ``hub_faults models=N faults=F wall_s=<x> requests=<n> clean_wall_s=<y> clean_requests=<m>``.
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path.insert(0, str(REPO / "tests"))

from hub_faults import Fault  # noqa: E402
from hub_server import HubServer  # noqa: E402

CONFIG = {
    "model_type": "bert", "architectures": ["BertForMaskedLM"], "vocab_size": 64, "hidden_size": 16,
    "num_hidden_layers": 1, "num_attention_heads": 2, "intermediate_size": 32, "max_position_embeddings": 32,
}


def serve(models: int) -> HubServer:
    server = HubServer(page_size=50).start()
    for i in range(models):
        config = json.dumps({**CONFIG, "layer_norm_eps": 1e-12 + i * 1e-15}).encode()  # distinct files per repo
        server.add_repo(f"bench/bert-{i:04d}", {"config.json": config, "README.md": b"x"}, downloads=10**6 - i,
                        library_name="transformers", pipeline_tag="fill-mask", tags=["transformers", "bert"])
    return server


def run_sweep(server: HubServer, models: int, work: Path, rpm: float) -> tuple[float, int, dict[str, int]]:
    """Wall seconds, requests the Hub saw, and record statuses of one CLI sweep."""
    env = {**os.environ, "HF_ENDPOINT": server.url, "HF_HOME": str(work / "hf"), "SWEEPER_CACHE": str(work / "cache"),
           "SWEEPER_RATE_DIR": str(work / "rate"), "HF_HUB_DISABLE_TELEMETRY": "1", "HF_HUB_DISABLE_XET": "1",
           "PYTHONPATH": str(REPO)}
    for name in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE", "HF_TOKEN"):
        env.pop(name, None)
    out = work / "run"
    args = [sys.executable, "-m", "sweeper.cli", "--source", "hub", "--top", str(models), "--weights", "tiny",
            "--device", "cpu", "--stages", "load", "--executor", "inline", "--hub-rpm", str(rpm),
            "--out", str(out), "--no-report", "--quiet"]
    before = len(server.log)
    started = time.perf_counter()
    proc = subprocess.run(args, env=env, capture_output=True, text=True, timeout=3600)
    wall = time.perf_counter() - started
    if proc.returncode != 0:
        raise SystemExit(f"sweep failed ({proc.returncode}): {proc.stderr[-2000:]}")
    records = [json.loads(line) for line in (out / "records.jsonl").read_text().splitlines() if line.strip()]
    ids = [r["model_id"] for r in records]
    if len(ids) != models or len(set(ids)) != models:
        raise SystemExit(f"expected {models} records, one per model; got {len(ids)} ({len(set(ids))} distinct)")
    return wall, len(server.log) - before, dict(collections.Counter(r["status"] for r in records))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", type=int, default=200)
    parser.add_argument("--faults", type=float, default=0.2, help="share of requests answered 429 or 503")
    parser.add_argument("--rpm", type=float, default=60_000, help="--hub-rpm for both sweeps")
    args = parser.parse_args()
    server = serve(args.models)
    try:
        with tempfile.TemporaryDirectory() as tmp:
            clean = run_sweep(server, args.models, Path(tmp) / "clean", args.rpm)
            half = args.faults / 2
            server.faults.add(Fault(429, fraction=half, retry_after="1", seed=1))
            server.faults.add(Fault(503, fraction=half / (1 - half), seed=2))  # of what the 429s left
            faulty = run_sweep(server, args.models, Path(tmp) / "faulty", args.rpm)
            injected = sum(f.hits for f in server.faults.faults)
    finally:
        server.stop()
    if faulty[2] != clean[2]:
        raise SystemExit(f"statuses differ: faulty {faulty[2]} vs clean {clean[2]}")
    print(f"clean:  {clean[0]:.1f} s, {clean[1]} requests, statuses {clean[2]}")
    print(f"faulty: {faulty[0]:.1f} s, {faulty[1]} requests ({injected} answered 429/503), statuses {faulty[2]}")
    print(f"hub_faults models={args.models} faults={args.faults} wall_s={faulty[0]:.1f} requests={faulty[1]} "
          f"clean_wall_s={clean[0]:.1f} clean_requests={clean[1]}")


if __name__ == "__main__":
    main()
