"""What a sweep's numerics verdicts rest on, counted from its records.jsonl.

    python benchmarks/numerics_verdicts.py --records runs/top1000/records.jsonl

Prints, over the distinct checks (records reused from another model's check counted once):
the float32 math the records ran under; references whose gradients all but vanish under
the default loss, how many a projection loss made alive, how many are not compared;
models that draw random numbers (and whether their draws were fed and matched); the
backward mode; gaps past the tolerance cleared as the CPU's noise, as the device's declared
math, or unproven; and numerics blockers by origin, each with whether the device was
within the bound of exact float32 (``within_exact``) or past it too.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from pathlib import Path

ALIVE = 1e-5


def _tables(numerics: dict) -> list[dict]:
    """A model's numerics, or its components' (a diffusers pipeline's parts: the record's
    own table then repeats what they found)."""
    parts = numerics.get("components") if isinstance(numerics.get("components"), dict) else {}
    return [t for t in parts.values() if isinstance(t, dict)] or [numerics]


def count(lines: list[str]) -> Counter:
    """The figures of one records file."""
    figures: Counter = Counter()
    for line in lines:
        record = json.loads(line)
        if record.get("reused_from"):
            continue
        figures["checks"] += 1
        precision = record.get("precision") or {}
        if precision:
            figures[f"math {precision.get('float32_matmul')}/{precision.get('float32_conv')}"] += 1
        mode = (record.get("notes") or {}).get("backward_mode")
        if mode:
            figures[f"backward mode {mode.split(' ')[0]}"] += 1
        for table in _tables(record.get("numerics") or {}):
            grads = table.get("reference_gradients")
            if isinstance(grads, dict):
                figures["gradient references"] += 1
                if (grads.get("default_loss_max") or 0) < ALIVE:
                    figures["  dead under the default loss"] += 1
                    if grads.get("loss") == "projection" and (grads.get("max") or 0) >= ALIVE:
                        figures["  made alive by the projection loss"] += 1
            if "backward_not_compared" in table:
                figures["  backward not compared (dead under every loss)"] += 1
            if table.get("random_ops"):
                figures["draw random numbers"] += 1
                for stage, fed in (table.get("random") or {}).items():
                    key = "fed the CPU's draws" if fed.get("compared", "").startswith("device run fed") else "not compared"
                    figures[f"  {stage}: {key}"] += 1
            for key in ("within_noise", "within_precision", "unproven"):
                if isinstance(table.get(key), dict):
                    figures[f"cleared: {key}"] += 1
        for blocker in record.get("blockers") or []:
            if blocker.get("kind") == "numerics":
                proof = _proof(record.get("numerics") or {})
                exact = "within exact float32's bound" if proof.get("within_exact") else "past exact float32's bound too"
                figures[f"numerics blocker, origin {blocker.get('origin')}: {exact}"] += 1
            if blocker.get("kind") in ("harness", "input_synthesis") and blocker.get("origin") == "device":
                figures["harness-kind blocker with origin device"] += 1
    return figures


def _proof(numerics: dict) -> dict:
    for table in _tables(numerics):
        noise = table.get("noise")
        if isinstance(noise, dict) and isinstance(noise.get("float64"), dict):
            return noise["float64"]
    return {}


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", required=True, help="a sweep's records.jsonl")
    args = parser.parse_args(argv)
    path = Path(args.records)
    if not path.is_file():
        print(f"numerics_verdicts: no such file: {path}", file=sys.stderr)
        return 2
    figures = count([ln for ln in path.read_text().splitlines() if ln.strip()])
    for key in sorted(figures):
        print(f"{key.strip()}: {figures[key]}")
    print("numerics_verdicts " + " ".join(f"{k.strip().replace(' ', '_')}={v}" for k, v in sorted(figures.items())))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
