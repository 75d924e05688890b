"""What the sweep harness costs: the same tiny zoo models in a bare loop and through `sweep`.

    python benchmarks/throughput.py [--models 8] [--workers 2] [--device trnsim] [--stages ...]

- ``floor``: ``--workers`` fresh processes, each taking the next model as it finishes, a
  bare loop of ``check_model`` (build, to device, forward, backward, compile) with one torch
  thread: no executor, no store, no progress. Its wall time includes each process's start
  and first imports (torch, transformers, the device), which every worker of a sweep pays too.
- ``process`` / ``ray``: ``run_sweep`` with that executor and as many workers, each model
  its own check (``--no-reuse``: the harness is measured, not reuse), into a fresh folder,
  no report. The driver's planning (its own imports) and Ray's start are timed before and
  reported apart as cold start, so the ratio compares the same work.
- ``harness-process`` / ``harness-ray``: the harness alone, per model: trivial checks
  (``--harness-models``) through ``run_sweep`` into a real store, with and without fsync,
  timed from the first record to the last (start-up left out).

The ratio is (sweep wall) / (floor wall): 1.00 means the harness costs nothing. Each part
runs in its own process; ``--repeat`` runs everything again and keeps each part's fastest
run (the machine may be shared). The last line reads
``throughput ray_ratio=R process_ratio=R models_per_min=N`` (models per minute through Ray,
cold start excluded).
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def _cfg(args: argparse.Namespace, **over):
    from sweeper.settings.config import build_config

    base = {"source": "zoo", "top": args.models, "device": args.device, "stages": args.stages, "num_cpus": 1.0,
            "workers": args.workers, "timeout": 600.0}  # fmt: skip
    return build_config({**base, **over}).replace(reuse=False)


_FLOOR: dict = {}


def _floor_init(argv: list[str], refs: list) -> None:
    """A floor process starts: imports and the device set up (timed apart)."""
    started = time.perf_counter()
    import torch

    from sweeper.checks.checker import Checker

    torch.set_num_threads(1)
    args = _parser().parse_args(argv)
    cfg = _cfg(args, executor="inline")
    checker = Checker.for_settings(cfg).setup()
    import transformers  # noqa: F401 - a worker's first model imports it; count it as start-up

    _FLOOR.update(checker=checker, refs=refs, imports_s=time.perf_counter() - started)
    gc.freeze()  # what survives the imports is live: later collections need not scan it


def _floor_one(index: int) -> tuple[str, float]:
    """One model in a bare loop's process: the check, then what any loop must drop."""
    import torch

    checker = _FLOOR["checker"]
    status = checker.check(_FLOOR["refs"][index]).status.value
    # Compiled graphs and guards of one model are dead weight for the next (a sweep's
    # worker drops them too).
    torch._dynamo.reset()
    checker.between_models()
    return status, _FLOOR["imports_s"]


def part_floor(args: argparse.Namespace) -> dict:
    """``--workers`` bare processes taking the next model as each finishes (as a sweep's
    workers do); wall time from their start to the last model's end."""
    import multiprocessing

    from sweeper.sources.base import get_source, select

    os.environ.update({"OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"})
    cfg = _cfg(args, executor="inline")
    refs = list(select(get_source(cfg).refs(), cfg))  # listed once, untimed, as a sweep's planning
    started = time.perf_counter()
    ctx = multiprocessing.get_context("spawn")
    statuses: dict[str, int] = {}
    imports = 0.0
    with ctx.Pool(args.workers, initializer=_floor_init, initargs=(args.argv, refs)) as pool:
        for status, imports_s in pool.imap_unordered(_floor_one, range(args.models), chunksize=1):
            statuses[status] = statuses.get(status, 0) + 1
            imports = max(imports, imports_s)
    return {"seconds": time.perf_counter() - started, "imports_s": imports, "statuses": statuses}


def part_sweep(args: argparse.Namespace, executor: str) -> dict:
    """``run_sweep`` through ``executor``; planning and Ray's start timed apart, before it."""
    started = time.perf_counter()
    from sweeper.runner import plan, run_sweep

    with tempfile.TemporaryDirectory() as tmp:
        cfg = _cfg(args, executor=executor, out=str(Path(tmp) / "out"))
        plan(cfg)  # the driver's imports and the source listing: cold start
        planned = time.perf_counter()
        ray_start = 0.0
        if executor == "ray":
            from sweeper.executors.ray import connect

            connect(cfg)
            ray_start = time.perf_counter() - planned
        before = time.perf_counter()
        run_sweep(cfg, quiet=True, write_report=False)
        seconds = time.perf_counter() - before
        from sweeper.storage.store import read_records

        records = read_records(cfg.out_dir)
    if executor == "ray":
        import ray

        ray.shutdown()
    statuses: dict[str, int] = {}
    for rec in records:
        statuses[rec.status.value] = statuses.get(rec.status.value, 0) + 1
    return {"seconds": seconds, "planning_s": planned - started, "ray_start_s": ray_start, "statuses": statuses}


def trivial_check(ref, cfg):
    """The cheapest record: what the harness costs per model when the model costs nothing."""
    from sweeper.records import ModelRecord, Status

    return ModelRecord(sweep_id="", model_id=ref.model_id, key=ref.key, device=cfg.device.spec, status=Status.PASS, rank=ref.rank)


def part_harness(args: argparse.Namespace, executor: str) -> dict:
    """Per-model cost of ``run_sweep`` itself: trivial checks through ``executor`` into a
    real store, timed from the first record written to the last (start-up left out); with
    fsync and without."""
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    import throughput  # the check must pickle by a module name workers can import

    out: dict[str, float] = {}
    real_fsync = os.fsync
    for label, fsync in (("ms_per_model", real_fsync), ("ms_per_model_no_fsync", lambda fd: None)):
        os.fsync = fsync
        out[label] = _trivial_sweep(args, executor, throughput.trivial_check) * 1000
    os.fsync = real_fsync
    return {"seconds": 0.0, **out}


def _trivial_sweep(args: argparse.Namespace, executor: str, check) -> float:
    """Seconds per record, first record to last, of ``run_sweep`` over trivial models."""
    from sweeper.runner import run_sweep
    from sweeper.storage.store import RecordStore

    written: list[tuple[float, int]] = []
    append_all = RecordStore.append_all

    def timed(self, records):
        append_all(self, records)
        written.append((time.perf_counter(), len(records)))

    RecordStore.append_all = timed
    try:
        with tempfile.TemporaryDirectory() as tmp:
            catalog = Path(tmp) / "c.csv"
            rows = "".join(f"{i},org/m{i},transformers,bert\n" for i in range(1, args.harness_models + 1))
            catalog.write_text("rank,id,library_name,model_type\n" + rows)
            cfg = _cfg(args, executor=executor, source="catalog", catalog=str(catalog), top=None,
                       out=str(Path(tmp) / "o"), worker_max_models=100_000)  # fmt: skip
            run_sweep(cfg, check=check, quiet=True, write_report=False)
    finally:
        RecordStore.append_all = append_all
    written = [w for w in written if w[1]]
    return (written[-1][0] - written[0][0]) / max(1, sum(n for _, n in written[1:]))


def _child(args: argparse.Namespace, part: str) -> dict:
    cmd = [sys.executable, __file__, *args.argv, "--part", part]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=3600)
    if proc.returncode != 0:
        raise SystemExit(f"part {part} failed:\n{proc.stderr[-3000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def _parser() -> argparse.ArgumentParser:
    """The command line (floor processes parse the same arguments)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", type=int, default=8)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--device", default="trnsim")
    parser.add_argument("--stages", default="load,to_device,forward,backward,compile")
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--harness-models", type=int, default=300, help="trivial checks timing the harness alone")
    parser.add_argument("--part", choices=("floor", "process", "ray", "harness-process", "harness-ray"))
    return parser


def main() -> None:
    """Run the floor and each executor (``--repeat`` times, fastest kept) and print the figures."""
    args = _parser().parse_args()
    args.argv = ["--models", str(args.models), "--workers", str(args.workers), "--device", args.device,
                 "--stages", args.stages, "--harness-models", str(args.harness_models)]  # fmt: skip
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
    os.environ.setdefault("HF_HUB_OFFLINE", "1")  # zoo models: never wait for the Hub
    parts = {"floor": lambda: part_floor(args),
             "process": lambda: part_sweep(args, "process"), "ray": lambda: part_sweep(args, "ray"),
             "harness-process": lambda: part_harness(args, "process"), "harness-ray": lambda: part_harness(args, "ray")}  # fmt: skip
    if args.part:
        print(json.dumps(parts[args.part]()))
        return
    best: dict[str, dict] = {}
    for _ in range(max(1, args.repeat)):
        for name in ("floor", "process", "ray", "harness-process", "harness-ray"):
            got = _child(args, name)
            print(f"{name}: {json.dumps(got)}", flush=True)
            if name not in best or got["seconds"] < best[name]["seconds"] or name.startswith("harness"):
                best[name] = got
    report(args, best)


def report(args: argparse.Namespace, best: dict[str, dict]) -> None:
    """The human lines and the closing machine-readable one."""
    floor, proc, ray = best["floor"], best["process"], best["ray"]
    n = args.models

    def per_min(seconds: float) -> float:
        return n / seconds * 60 if seconds else 0.0

    print(f"{n} tiny zoo models on {args.device}, {args.workers} workers ({args.stages})")
    print(f"cold start (apart): worker imports {floor['imports_s']:.1f} s, driver planning {ray['planning_s']:.1f} s, "
          f"Ray start {ray['ray_start_s']:.1f} s")  # fmt: skip
    for name, got in (("floor (bare loop)", floor), ("sweep --executor process", proc), ("sweep --executor ray", ray)):
        print(f"{name:<26} {got['seconds']:7.1f} s  {per_min(got['seconds']):6.1f} models/min  "
              f"ratio {got['seconds'] / floor['seconds']:.2f}  {got['statuses']}")  # fmt: skip
    floor_ms = floor["seconds"] * args.workers / n * 1000  # one model's time in one worker
    for name in ("harness-process", "harness-ray"):
        got = best[name]
        print(f"{name}: {got['ms_per_model']:.1f} ms per model with fsync, {got['ms_per_model_no_fsync']:.1f} ms without "
              f"({args.harness_models} trivial checks); against {floor_ms / 1000:.1f} s per model in the floor: "
              f"{got['ms_per_model'] / floor_ms * 100:.2f}%")  # fmt: skip
    print(f"throughput ray_ratio={ray['seconds'] / floor['seconds']:.2f} process_ratio={proc['seconds'] / floor['seconds']:.2f} "
          f"models_per_min={per_min(ray['seconds']):.1f}")  # fmt: skip


if __name__ == "__main__":
    main()
