"""Where trnsim's compile stage spends its time, and how long it takes per zoo model.

Runs the sweep's own check (``check_model``: build with tiny weights, forward, backward,
compile) for the top N zoo model types on trnsim in this one process, after the device's
warm-up (a small MLP compiled once: first imports of Dynamo, Torch-MLIR), as a sweep
worker does before its first model. Prints each model's compile stage (wall and CPU seconds; CPU includes the lowering children and
the autograd thread, so on shared cores it is the steadier figure), then the per-phase
breakdown of tiny Llama's compile. ``rest`` is what the backend does not see: Dynamo's
bytecode tracing and guards, and running the compiled graphs.

    python benchmarks/compile_profile.py [--models N] [--types llama,bert]
    python benchmarks/compile_profile.py --catalog FILE --ids ORG/NAME,ORG/NAME [--phases]
    python benchmarks/compile_profile.py --records OUT/records.jsonl [...]

With ``--records``, it runs nothing and summarises the compile stage of sweeps already
made (one line per records file): ``compile median=<s> p90=<s> max=<s> models=<n>``.

Last line: ``compile_profile median_s=<x> llama_s=<y>`` (wall seconds of the compile stage;
``median_cpu_s`` and ``llama_cpu_s`` follow).
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import sys
import time
import warnings
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))


def cpu_seconds() -> float:
    """CPU time of this process (all threads) and of its reaped children."""
    child = resource.getrusage(resource.RUSAGE_CHILDREN)
    return time.process_time() + child.ru_utime + child.ru_stime


def timed_compile_stage() -> dict[str, Any]:
    """Wrap the sweep's compile stage to record its CPU seconds and phases per model."""
    from sweeper.checks import checker as check
    from sweeper.checks import stages
    from sweeper.devices.trnsim import phases
    from sweeper.records import Stage

    last: dict[str, Any] = {}

    def compile_stage(ctx: stages.StageContext) -> None:
        phases.reset()
        cpu0 = cpu_seconds()
        try:
            stages.compile_stage(ctx)
        finally:
            last["cpu"] = cpu_seconds() - cpu0
            last["phases"] = phases.snapshot()

    check.STAGE_FUNCS[Stage.COMPILE] = compile_stage
    return last


def print_phases(name: str, wall: float, cpu: float, table: dict[str, Any]) -> None:
    """The per-phase breakdown of one model's compile stage."""
    print(f"\n{name}: compile stage {wall:.2f} s wall, {cpu:.2f} s CPU")
    print(f"  {'phase':16s} {'wall_s':>7s} {'cpu_s':>7s} {'count':>5s}")
    for phase, t in sorted(table.items(), key=lambda kv: -kv[1].wall):
        print(f"  {phase:16s} {t.wall:7.2f} {t.cpu:7.2f} {t.count:5d}")
    rest = wall - sum(t.wall for t in table.values())
    print(f"  {'rest':16s} {rest:7.2f} {'':>7s}       (Dynamo tracing, guards, graph runs)")


def records_summary(path: str) -> str:
    """Median, p90 and max wall seconds of the compile stage over a sweep's records."""
    import json

    seconds = []
    with open(path, encoding="utf-8") as fh:
        for line in fh:
            stage = json.loads(line).get("stages", {}).get("compile") if line.strip() else None
            if stage and stage.get("status") != "blocked" and stage.get("seconds") is not None:
                seconds.append(float(stage["seconds"]))
    if not seconds:
        return f"{path}: no model reached the compile stage"
    seconds.sort()
    p90 = seconds[min(len(seconds) - 1, round(0.9 * (len(seconds) - 1)))]
    return (f"{path}: compile median={statistics.median(seconds):.2f} p90={p90:.2f} max={seconds[-1]:.2f} "
            f"models={len(seconds)}")


def catalog_refs(cfg: Any, ids: str) -> list[Any]:
    """The refs of ``ids`` in the settings' catalog (exit with a line when one is unknown)."""
    from sweeper.settings.errors import UsageError
    from sweeper.sources.resolve import resolve_model

    try:
        return [resolve_model(model_id, cfg) for model_id in ids.split(",") if model_id]
    except UsageError as exc:
        sys.exit(f"compile_profile: {exc}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", type=int, default=10, help="top N zoo model types (default 10)")
    parser.add_argument("--types", default="", help="comma-separated model types instead of the top N")
    parser.add_argument("--catalog", default="", help="a catalog file: profile the models --ids names from it")
    parser.add_argument("--ids", default="", help="comma-separated model ids of --catalog instead of zoo types")
    parser.add_argument("--phases", action="store_true", help="print every model's breakdown, not only llama's")
    parser.add_argument("--records", nargs="+", default=[], help="summarise these records.jsonl files instead")
    args = parser.parse_args()
    if args.records:
        for path in args.records:
            try:
                print(records_summary(path))
            except (OSError, ValueError) as exc:
                sys.exit(f"compile_profile: cannot read {path}: {exc}")
        return
    warnings.simplefilter("ignore")
    os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
    import torch

    torch.set_num_threads(1)
    from sweeper.checks.checker import Checker
    from sweeper.settings.config import SweepConfig
    from sweeper.sources.zoo import zoo_ref, zoo_types

    types = [t for t in args.types.split(",") if t] or list(zoo_types()[:args.models])
    if "llama" not in types:
        types.append("llama")
    cfg = SweepConfig.of(device="trnsim", **({"catalog": args.catalog} if args.catalog else {}))
    refs = catalog_refs(cfg, args.ids) if args.ids else [zoo_ref(t, rank) for rank, t in enumerate(types, start=1)]
    checker = Checker.for_settings(cfg).setup()
    checker.device.warm_up()
    last = timed_compile_stage()
    walls, cpus, llama = [], [], None
    for ref in refs:
        label = ref.model_id if args.ids else ref.model_type
        record = checker.check(ref)
        stage = record.stages.get("compile")
        if stage is None or stage.status.value == "blocked":
            print(f"{label:14s} compile not reached: {record.status.value}")
            continue
        verdict = f"{stage.reason.kind.value} {stage.reason.op or ''}" if stage.reason else "pass"
        print(f"{label:14s} {stage.seconds:6.2f} s wall {last['cpu']:6.2f} s CPU  {verdict}", flush=True)
        walls.append(stage.seconds)
        cpus.append(last["cpu"])
        if label == "llama":
            llama = (stage.seconds, last["cpu"], last["phases"])
        elif args.phases:
            print_phases(label, stage.seconds, last["cpu"], last["phases"])
    if llama is not None:
        print_phases("llama", *llama)
    if not walls:
        print("compile_profile: no model reached the compile stage", file=sys.stderr)
        sys.exit(1)
    llama_wall, llama_cpu = (llama[0], llama[1]) if llama else (float("nan"), float("nan"))
    print(f"compile_profile median_s={statistics.median(walls):.2f} llama_s={llama_wall:.2f} "
          f"median_cpu_s={statistics.median(cpus):.2f} llama_cpu_s={llama_cpu:.2f} models={len(walls)}")


if __name__ == "__main__":
    main()
