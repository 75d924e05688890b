"""What the shapes stage costs on a device that takes symbolic shapes (cpu, inductor).

Runs the same zoo sweep twice on ``--device cpu`` with the process executor: with the
default stages, then without the shapes stage. Prints each sweep's wall time and check
seconds per stage, the ratio of the two walls, the records that are timeouts (of the
model, or of the shapes stage alone), the shapes verdicts, and whether every model's
stages before the shapes stage got the same verdict in both sweeps. Each sweep compiles cold:
its own empty inductor cache (the second would otherwise reuse the first one's kernels).
Last line:
``shapes_cost with_s=<s> without_s=<s> ratio=<x> timeouts=<n> stage_timeouts=<n> same=<0|1>``.

    python benchmarks/shapes_cost.py --top 16
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

REPO = Path(__file__).resolve().parent.parent
WITHOUT_SHAPES = "load,to_device,forward,backward,compile"


def sweep(out: Path, top: int, stages: str | None, extra: list[str]) -> float:
    """One sweep into ``out``; its wall seconds."""
    cmd = [sys.executable, "-m", "sweeper", "--top", str(top), "--source", "zoo", "--device", "cpu",
           "--executor", "process", "--no-report", "--quiet", "--out", str(out), *extra]
    if stages:
        cmd += ["--stages", stages]
    cache = out.parent / f"inductor-cache-{out.name}"
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TORCHINDUCTOR_CACHE_DIR": str(cache), "TRITON_CACHE_DIR": str(cache / "triton")}
    started = time.monotonic()
    proc = subprocess.run(cmd, cwd=REPO, text=True, capture_output=True, env=env)
    wall = time.monotonic() - started
    if proc.returncode != 0:
        sys.exit(f"sweep failed ({proc.returncode}): {proc.stderr.strip()[-500:]}")
    return wall


def records(out: Path) -> dict[str, dict]:
    rows = [json.loads(line) for line in (out / "records.jsonl").read_text().splitlines() if line.strip()]
    return {r["key"]: r for r in rows}


def stage_seconds(rows: dict[str, dict]) -> dict[str, float]:
    total: collections.Counter[str] = collections.Counter()
    for r in rows.values():
        for name, stage in (r.get("stages") or {}).items():
            total[name] += float(stage.get("seconds") or 0.0)
    return dict(total)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--top", type=int, default=16, help="zoo entries to sweep")
    parser.add_argument("--out", help="keep the two sweeps here (default: a temporary folder)")
    parser.add_argument("extra", nargs="*", help="more sweep flags for both runs (after --)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="shapes-cost-") as tmp:
        base = Path(args.out) if args.out else Path(tmp)
        with_dir, without_dir = base / "with-shapes", base / "without-shapes"
        with_s = sweep(with_dir, args.top, None, args.extra)
        without_s = sweep(without_dir, args.top, WITHOUT_SHAPES, args.extra)
        withs, withouts = records(with_dir), records(without_dir)
    for label, wall, rows in (("with the shapes stage", with_s, withs), ("without it", without_s, withouts)):
        per_stage = ", ".join(f"{k} {v:.0f}" for k, v in stage_seconds(rows).items())
        print(f"{label}: {len(rows)} models in {wall:.0f} s of wall; check seconds: {per_stage}")
    timeouts = [k for k, r in withs.items() if r.get("status") == "timeout"]
    stage_timeouts = [k for k, r in withs.items() if (r.get("stages") or {}).get("shapes", {}).get("status") == "timeout"]
    verdicts = collections.Counter((r.get("shapes") or {}).get("verdict") for r in withs.values())
    differ = [k for k in withs if k in withouts and any(
        (withs[k]["stages"].get(s) or {}).get("status") != (withouts[k]["stages"].get(s) or {}).get("status")
        for s in WITHOUT_SHAPES.split(","))]
    print(f"shapes verdicts: {dict(verdicts)}")
    print(f"timeout records: {len(timeouts)} {timeouts}; shapes-stage timeouts (earlier verdicts kept): "
          f"{len(stage_timeouts)} {stage_timeouts}")
    print(f"models whose stages before shapes differ between the sweeps: {len(differ)} {differ}")
    ratio = with_s / without_s if without_s else float("nan")
    print(f"shapes_cost with_s={with_s:.0f} without_s={without_s:.0f} ratio={ratio:.2f} timeouts={len(timeouts)} "
          f"stage_timeouts={len(stage_timeouts)} same={int(not differ)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
