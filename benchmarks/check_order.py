"""How long a sweep's checks take on N workers in three start orders, replayed from its records.

Each record that ran a check (not a copy: ``reused_from`` empty) is one job of its recorded
``seconds`` plus a per-check overhead; a worker takes the next job when it is free. The
orders: the catalog's rank order, the sweep's own (``sweeper.executors.order.longest_first``,
known before anything runs) and longest recorded first (the best greedy order, known only
after the run). Prints one line per order with the makespan in seconds.

    python benchmarks/check_order.py --records OUT/records.jsonl [--workers 2] [--overhead 0.25]
"""

from __future__ import annotations

import argparse
import heapq
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))


def makespan(seconds: list[float], workers: int, overhead: float) -> float:
    """When the last of ``seconds`` ends, each started on the first free worker in order."""
    free = [0.0] * max(1, workers)
    for s in seconds:
        start = heapq.heappop(free)
        heapq.heappush(free, start + s + overhead)
    return max(free)


def main() -> None:
    from sweeper.executors.order import longest_first
    from sweeper.records import ModelRef

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", required=True, help="a sweep's records.jsonl")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--overhead", type=float, default=0.25, help="seconds per check outside its record (default 0.25)")
    args = parser.parse_args()
    try:
        lines = Path(args.records).read_text(encoding="utf-8").splitlines()
        ran = [r for r in (json.loads(line) for line in lines if line.strip()) if not r.get("reused_from")]
    except (OSError, ValueError) as exc:
        sys.exit(f"check_order: cannot read {args.records}: {exc}")
    jobs = [(ModelRef(model_id=r["model_id"], rank=r["rank"], pipeline_tag=r.get("pipeline_tag"),
                      library_name=r.get("library_name"), model_type=r.get("model_type")), float(r.get("seconds") or 0.0))
            for r in ran]
    seconds = {id(ref): s for ref, s in jobs}
    by_rank = sorted((ref for ref, _ in jobs), key=lambda ref: ref.rank)
    orders = {
        "rank": by_rank,
        "longest_expected_first": longest_first(by_rank),
        "longest_recorded_first": sorted(by_rank, key=lambda ref: -seconds[id(ref)]),
    }
    print(f"{len(jobs)} checks, {sum(seconds.values()):.0f} s of checks, {args.workers} workers")
    for name, order in orders.items():
        print(f"check_order {name}_s={makespan([seconds[id(ref)] for ref in order], args.workers, args.overhead):.0f}")

if __name__ == "__main__":
    main()
