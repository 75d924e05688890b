"""Reference gradients that all but vanish, before and after: the CPU reference as it was
(eval mode, the mean of the outputs as the loss) against what a sweep's records say the
reference is now (a training step, and a projection loss where the mean's gradients vanish).

    HF_HUB_OFFLINE=1 python benchmarks/reference_gradients.py --records DIR/records.jsonl \\
        [--catalog CATALOG.csv]      # the catalog the sweep read (none: a zoo sweep)

Rebuilds each distinct check of the sweep (records reused from another model's check are
counted once; a diffusers pipeline's components each count) on the CPU, runs the old
reference's backward and prints, with the threshold ``stages.ALIVE_GRADIENT``: how many
references were dead before, how many are dead now under the default loss, how many the
projection loss made alive, how many are not compared; the last line sums it up.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import warnings
from pathlib import Path
from typing import Any


def old_scale(built: Any, seed: int) -> float:
    """The largest gradient of the reference as it was: eval mode, the default loss."""
    from sweeper.checks.reference import cpu_reference
    from sweeper.checks.stages import gradient_scale

    run = cpu_reference(built.model, built.inputs, seed=seed, has_labels=built.has_labels, grads=True, mode="eval")
    return gradient_scale(run.grads)


def new_figures(numerics: dict, part: str | None) -> tuple[dict, bool]:
    """The record's reference figures (of one component), and whether backward went uncompared."""
    table = (numerics.get("components") or {}).get(part, {}) if part else numerics
    return table.get("reference_gradients") or {}, "backward_not_compared" in table


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", required=True)
    parser.add_argument("--catalog", default="")
    args = parser.parse_args(argv)
    path = Path(args.records)
    if not path.is_file():
        print(f"reference_gradients: no such file: {path}", file=sys.stderr)
        return 2
    warnings.simplefilter("ignore")
    os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
    import torch

    torch.set_num_threads(1)
    from sweeper.checks.stages import ALIVE_GRADIENT
    from sweeper.libraries import build
    from sweeper.records import ModelRecord, ModelRef
    from sweeper.settings.config import SweepConfig
    from sweeper.sources.resolve import resolve_model

    cfg = SweepConfig.of(device="cpu", **({"catalog": args.catalog} if args.catalog else {}))
    counts = {"references": 0, "dead_before": 0, "dead_default_loss_now": 0, "alive_by_projection": 0,
              "not_compared": 0, "unbuilt": 0}
    for line in path.read_text().splitlines():
        record = ModelRecord.from_json(line)
        if record.reused_from or not isinstance(record.numerics, dict):
            continue
        parts = list(record.numerics.get("components") or {}) or [None]
        if not any(new_figures(record.numerics, p)[0] for p in parts):
            continue
        try:
            ref = resolve_model(record.model_id, cfg) if args.catalog else ModelRef(
                record.model_id, record.rank or 1, model_type=record.model_type, architecture=record.architecture,
                library_name=record.library_name, source="zoo")
            built = build(ref, cfg)
        except Exception as exc:  # noqa: BLE001 - counted, the rest goes on
            counts["unbuilt"] += 1
            print(f"{record.model_id}: not built ({type(exc).__name__})")
            continue
        for part in parts:
            figures, not_compared = new_figures(record.numerics, part)
            if not figures:
                continue
            target = built.components[part] if part else built
            try:
                before = old_scale(target, cfg.materialise.seed)
            except Exception as exc:  # noqa: BLE001
                print(f"{record.model_id}{'/' + part if part else ''}: old reference failed ({type(exc).__name__})")
                continue
            counts["references"] += 1
            dead_before = before < ALIVE_GRADIENT
            counts["dead_before"] += dead_before
            counts["dead_default_loss_now"] += figures.get("default_loss_max", 0) < ALIVE_GRADIENT
            counts["alive_by_projection"] += figures.get("loss") == "projection" and not not_compared
            counts["not_compared"] += not_compared
            if dead_before or figures.get("loss") == "projection" or not_compared:
                print(f"{record.model_id}{'/' + part if part else ''}: eval+mean {before:.3g} -> "
                      f"{figures.get('mode')}+mean {figures.get('default_loss_max', 0):.3g} -> "
                      f"{figures.get('loss')} {figures.get('max', 0):.3g}" + (" (not compared)" if not_compared else ""))
    print(json.dumps(counts))
    print("reference_gradients " + " ".join(f"{k}={v}" for k, v in counts.items()))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
