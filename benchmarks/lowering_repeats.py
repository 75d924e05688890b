"""How many of a sweep's lowerings are repeats, and what reusing them saves.

    TRNSIM_LOWERING_LOG=/tmp/lowerings.log sweep --device trnsim ... --out DIR
    python benchmarks/lowering_repeats.py /tmp/lowerings.log

The log has one line per lowering a check asked for (``sweeper/devices/trnsim/lowercache.py``):
the graph's key, its kind (forward, backward, inference), where the verdict came from
(``lowered`` by Torch-MLIR, answered in the ``process`` that lowered it before, or from the
sweep's ``shared`` folder) and the seconds the answer took. A repeat is a key asked for
before; its cost without reuse is what lowering that key took the first time.
Last line: ``lowering_repeats asked=<n> distinct=<n> repeat_share=<r> shared=<n> saved_s=<s>``.
"""

from __future__ import annotations

import argparse
import sys
from collections import Counter
from pathlib import Path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("log", type=Path)
    args = parser.parse_args()
    first_cost: dict[str, float] = {}
    sources: Counter[str] = Counter()
    by_kind: Counter[str] = Counter()
    repeats_by_kind: Counter[str] = Counter()
    asked = repeats = 0
    repeat_cost = answer_cost = 0.0
    for line in args.log.read_text(encoding="utf-8").splitlines():
        parts = line.split()
        if len(parts) != 4:
            continue
        key, kind, source, seconds = parts[0], parts[1], parts[2], float(parts[3])
        asked += 1
        sources[source] += 1
        by_kind[kind] += 1
        if key == "-":  # a graph whose constants cannot be read: never reused
            continue
        if source == "lowered" and key not in first_cost:
            first_cost[key] = seconds
        else:
            repeats += 1
            repeats_by_kind[kind] += 1
            repeat_cost += first_cost.get(key, 0.0)
            answer_cost += seconds if source != "lowered" else 0.0
    if not asked:
        print(f"lowering_repeats: {args.log} holds no lowering", file=sys.stderr)
        sys.exit(1)
    distinct = asked - repeats
    print(f"{asked} lowerings asked for, {distinct} distinct graphs, {repeats} repeats "
          f"({100 * repeats / asked:.1f}%)")
    for kind, count in sorted(by_kind.items()):
        print(f"  {kind:10s} {count:6d} asked, {repeats_by_kind[kind]:6d} repeats")
    print("answered: " + ", ".join(f"{source} {count}" for source, count in sorted(sources.items())))
    print(f"lowering the repeats again would cost {repeat_cost:.0f} s of worker time "
          f"(their first lowering's); answering them took {answer_cost:.1f} s")
    print(f"lowering_repeats asked={asked} distinct={distinct} repeat_share={repeats / asked:.3f} "
          f"shared={sources['shared']} saved_s={repeat_cost - answer_cost:.1f}")


if __name__ == "__main__":
    main()
