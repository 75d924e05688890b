"""Executor figures: Ray start-up, Ray's per-model overhead against inline, throughput, and
the driver's memory while 55,000 models stream through Ray.

    python benchmarks/executors.py [--models 50] [--stages load,forward,backward] [--scale 0]

Each part runs in a fresh child process so imports and memory do not leak between them:

- ``start``: seconds for ``ray.init`` as the executor calls it (local, sized to the machine).
- ``inline`` / ``ray1`` / ``ray2``: the same tiny zoo models through the real check on cpu
  with one torch thread per model: inline, then Ray with one worker (the overhead ratio
  compares them per model once workers are up; the total, imports included, is printed too;
  each runs twice, the faster counts) and Ray with two workers (models per minute).
- ``scale``: the 2022 Hub listing (~55,000 models, read lazily) through Ray with a trivial
  check into the real record store; the driver's peak RSS is the figure. fsync is skipped
  (it guards against power loss and costs ~5 ms a record on a shared disk; it does not
  change memory). ``--scale N`` caps the count (0 = all).

The last line reads ``executors ray_start_s=S overhead_ratio=R models_per_min=N driver_peak_rss_mib=M``.
"""

from __future__ import annotations

import argparse
import csv
import gzip
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
CATALOG = REPO.parent / "shared" / "catalogs" / "hub-models-2022-07.csv.gz"
sys.path.insert(0, str(REPO / "tests" / "executors"))  # trivial_check for the scale part


def _zoo_cfg(args: argparse.Namespace, executor: str, workers: int):
    from sweeper.settings.config import build_config

    # One CPU (one torch thread) per model everywhere, inline too: on a loaded machine,
    # threads fighting for cores would swamp the executor's own cost being measured.
    return build_config({"source": "zoo", "top": args.models, "device": "cpu", "stages": args.stages,
                         "executor": executor, "workers": workers, "num_cpus": 1.0, "timeout": 300.0})


def part_start(args: argparse.Namespace) -> dict:
    """Local Ray start-up as ``connect`` does it."""
    import ray

    from sweeper.executors.ray import connect
    from sweeper.settings.config import SweepConfig

    started = time.perf_counter()
    connect(SweepConfig())
    seconds = time.perf_counter() - started
    ray.shutdown()
    return {"ray_start_s": seconds}


def part_zoo(args: argparse.Namespace, executor: str, workers: int) -> dict:
    """Wall time of the zoo models through ``executor`` from a fresh process.

    ``seconds`` counts from before the first import of torch and transformers on both
    sides (the inline driver pays them itself, a Ray worker in its own process); only
    ``ray.init`` is left out (``ray_start_s`` reports it).
    """
    started = time.perf_counter()
    from sweeper.checks.checker import Checker
    from sweeper.executors.base import get_executor
    from sweeper.runner import plan

    cfg = _zoo_cfg(args, executor, workers)
    refs, _, spec = plan(cfg)
    if executor == "inline":
        import torch

        torch.set_num_threads(1)  # what a worker given --num-cpus 1 uses
    ray_init = 0.0
    if executor == "ray":
        from sweeper.executors.ray import connect

        before = time.perf_counter()
        connect(cfg)
        ray_init = time.perf_counter() - before
    statuses: dict[str, int] = {}
    done_at: list[float] = []

    def on_record(record) -> None:
        statuses[record.status.value] = statuses.get(record.status.value, 0) + 1
        done_at.append(time.perf_counter())

    ex = get_executor(cfg)
    try:
        ex.run(iter(refs), cfg, check=Checker(cfg, spec), on_record=on_record)
    finally:
        seconds = time.perf_counter() - started - ray_init
        ex.close()
    # Steady state: from the first record to the last, so worker start-up (interpreter,
    # torch and transformers imports) is left out on both sides.
    steady = (done_at[-1] - done_at[0]) / (len(done_at) - 1) if len(done_at) > 1 else seconds
    return {"models": len(refs), "seconds": seconds, "steady_s_per_model": steady, "statuses": statuses}


def _catalog_refs(limit: int) -> Iterator:
    from sweeper.records import ModelRef

    with gzip.open(CATALOG, "rt", newline="") as fh:
        for i, row in enumerate(csv.DictReader(fh)):
            if limit and i >= limit:
                return
            yield ModelRef(model_id=row["id"], rank=i + 1, pipeline_tag=row["pipeline_tag"] or None)


def part_scale(args: argparse.Namespace) -> dict:
    """The 55,000-model scheduling run; the driver's peak RSS before and after."""
    from executor_faults import trivial_check

    from sweeper.executors.ray import RayExecutor, connect
    from sweeper.settings.config import SweepConfig
    from sweeper.storage.store import RecordStore

    os.fsync = lambda fd: None  # see the module docstring
    cfg = SweepConfig.of(executor="ray", workers=2, worker_max_models=1_000_000)
    connect(cfg)
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    count = 0
    with tempfile.TemporaryDirectory() as tmp, RecordStore(Path(tmp)) as store:

        def on_record(record) -> None:
            nonlocal count
            store.append(record)
            count += 1

        ex = RayExecutor(cfg)
        started = time.perf_counter()
        try:
            ex.run(_catalog_refs(args.scale), cfg, check=trivial_check, on_record=on_record)
        finally:
            seconds = time.perf_counter() - started
            ex.close()
        unique = len(store.done_keys())
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return {"records": count, "unique_keys": unique, "seconds": seconds, "rss_before_mib": before, "peak_rss_mib": peak}


def _child(part: str, argv: list[str]) -> dict:
    cmd = [sys.executable, __file__, "--part", part, *argv]
    proc = subprocess.run(cmd, check=False, capture_output=True, text=True, timeout=3600)
    if proc.returncode != 0:
        raise SystemExit(f"part {part} failed:\n{proc.stderr[-3000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def main() -> None:
    """Run every part in its own process and print the figures."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", type=int, default=50)
    parser.add_argument("--stages", default="load,forward,backward")
    parser.add_argument("--scale", type=int, default=0, help="cap the scheduling run (0 = the whole catalog)")
    parser.add_argument("--part", choices=("start", "inline", "ray1", "ray2", "scale"))
    args = parser.parse_args()
    parts = {"start": lambda: part_start(args), "inline": lambda: part_zoo(args, "inline", 1),
             "ray1": lambda: part_zoo(args, "ray", 1), "ray2": lambda: part_zoo(args, "ray", 2),
             "scale": lambda: part_scale(args)}  # fmt: skip
    if args.part:
        print(json.dumps(parts[args.part]()))
        return
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
    argv = ["--models", str(args.models), "--stages", args.stages, "--scale", str(args.scale)]
    got: dict[str, dict] = {}
    # inline and ray1 alternate twice and the faster run of each counts: the machine is shared.
    for name in ("start", "inline", "ray1", "inline", "ray1", "ray2", "scale"):
        result = _child(name, argv)
        print(f"{name}: {json.dumps(result)}", flush=True)
        if name not in got or result.get("seconds", 0) < got[name].get("seconds", 0):
            got[name] = result
    inline, ray1, ray2, scale = got["inline"], got["ray1"], got["ray2"], got["scale"]
    total_ratio = ray1["seconds"] / inline["seconds"]
    per_model_ms = (ray1["seconds"] - inline["seconds"]) / max(1, inline["models"]) * 1000
    per_min = ray2["models"] / ray2["seconds"] * 60
    # The per-model overhead: steady state, once the worker is up (its start-up is a
    # one-off, shown in the total ratio).
    ratio = ray1["steady_s_per_model"] / inline["steady_s_per_model"]
    print(f"ray start-up: {got['start']['ray_start_s']:.2f} s")
    print(f"{inline['models']} tiny zoo models ({args.stages}), imports included: inline {inline['seconds']:.1f} s, "
          f"ray 1 worker {ray1['seconds']:.1f} s -> ratio {total_ratio:.2f}, {per_model_ms:+.0f} ms/model")
    print(f"steady state (first record to last): inline {inline['steady_s_per_model'] * 1000:.0f} ms/model, "
          f"ray {ray1['steady_s_per_model'] * 1000:.0f} ms/model -> ratio {ratio:.2f}")
    print(f"ray 2 workers: {ray2['seconds']:.1f} s -> {per_min:.1f} models/min")
    print(f"scheduling: {scale['records']} models in {scale['seconds']:.1f} s "
          f"({scale['records'] / scale['seconds']:.0f}/s), driver peak RSS {scale['peak_rss_mib']:.0f} MiB "
          f"(after imports + ray.init: {scale['rss_before_mib']:.0f} MiB)")
    print(f"executors ray_start_s={got['start']['ray_start_s']:.2f} overhead_ratio={ratio:.2f} "
          f"models_per_min={per_min:.1f} driver_peak_rss_mib={scale['peak_rss_mib']:.0f}")


if __name__ == "__main__":
    main()
