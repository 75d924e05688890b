"""How far a sweep's wall is from PyTorch's own tracing: the floor, the wall, the rest.

    python benchmarks/floor.py OUT [--workers N]

The floor is what ``torch.compile`` costs any user: Dynamo's and AOT autograd's own tracing
(``record.compile_phases``, measured in every check by ``checks.compile_time``), summed
over the checks that ran in this sweep (records reused from an earlier one left out) and
divided by the workers that ran them in parallel. Everything else is ours, and is split:
the eager stages (load with its CPU references, to_device, forward, backward), the
compile-stage time past the floor by phase (the backend's lowering, op scan and checks;
``graph runs`` is running the compiled model and comparing it), the shapes stage likewise,
and what no check holds (start-up, planning, hand-over, CPU controls), from the wall.

``--workers``: the workers of the sweep (default: its ``execution.workers``, else this
machine's CPUs over ``execution.num_cpus``, as the executors choose).
Last line: ``floor wall_s=<w> floor_s=<f> ratio=<w/f>``.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections import Counter
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

FLOOR = ("dynamo", "aot_autograd")
EAGER = ("load", "to_device", "forward", "backward")
COMPILING = ("compile", "shapes")


def records(folder: Path) -> list[dict[str, Any]]:
    """The folder's records, the last line of a key winning."""
    out: dict[str, dict[str, Any]] = {}
    for line in (folder / "records.jsonl").read_text(encoding="utf-8").splitlines():
        if line.strip():
            record = json.loads(line)
            out[record["key"]] = record
    return list(out.values())


def workers_of(meta: dict[str, Any], override: int | None) -> int:
    if override:
        return override
    run = (meta.get("config") or {})
    if run.get("workers"):
        return int(run["workers"])
    return max(1, int((os.cpu_count() or 1) // max(float(run.get("num_cpus") or 1.0), 1e-9)))


def split(rows: list[dict[str, Any]]) -> tuple[Counter[str], Counter[str], int]:
    """(floor seconds by phase, the rest of check time by part, checks counted)."""
    floor: Counter[str] = Counter()
    rest: Counter[str] = Counter()
    ran = 0
    for record in rows:
        if record.get("reused_from"):
            continue
        ran += 1
        stages = record.get("stages") or {}
        phases = record.get("compile_phases") or {}
        for name, result in stages.items():
            seconds = float((result or {}).get("seconds") or 0.0)
            if name not in COMPILING:
                rest[name if name in EAGER else "other stages"] += seconds
                continue
            spent = phases.get(name) or {}
            for phase, value in spent.items():
                (floor if phase in FLOOR else rest)[phase if phase in FLOOR else f"{name}: {phase}"] += float(value)
            rest[f"{name}: graph runs"] += max(0.0, seconds - sum(float(v) for v in spent.values()))
        rest["between stages"] += max(0.0, float(record.get("seconds") or 0.0)
                                      - sum(float((r or {}).get("seconds") or 0.0) for r in stages.values()))
    return floor, rest, ran


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folder", type=Path)
    parser.add_argument("--workers", type=int, default=None)
    args = parser.parse_args()
    meta = json.loads((args.folder / "sweep.json").read_text(encoding="utf-8"))
    wall = float(meta.get("wall_seconds") or 0.0)
    workers = workers_of(meta, args.workers)
    floor, rest, ran = split(records(args.folder))
    floor_checks = sum(floor.values())
    if floor_checks <= 0:
        print(f"floor: no compile phases in {args.folder}/records.jsonl (a sweep from before they were recorded, "
              "or one that compiled nothing)")
        sys.exit(1)
    floor_wall = floor_checks / workers
    checks = floor_checks + sum(rest.values())
    outside = max(0.0, wall * workers - checks)
    print(f"{ran} checks ran on {workers} workers; wall {wall:.0f} s, {checks:.0f} s of check time")
    print(f"floor: Dynamo {floor['dynamo']:.0f} s + AOT autograd {floor['aot_autograd']:.0f} s = "
          f"{floor_checks:.0f} s of check time, {floor_wall:.0f} s of wall")
    print(f"wall / floor: {wall / floor_wall:.2f}x")
    print("the rest, by part (worker seconds; share of the workers' wall):")
    parts = [*rest.items(), ("outside checks (start-up, planning, hand-over, controls)", outside)]
    for part, seconds in sorted(parts, key=lambda kv: -kv[1]):
        if seconds >= 0.5:
            print(f"  {part:58s} {seconds:8.0f} s  {100 * seconds / (wall * workers):5.1f}%")
    print(f"floor wall_s={wall:.1f} floor_s={floor_wall:.1f} ratio={wall / floor_wall:.3f}")


if __name__ == "__main__":
    main()
