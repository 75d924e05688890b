"""Numerics: how far each model's results on the device are from the CPU's.

The load stage runs the model on the CPU first (same seed, eval mode, same dtype) and
keeps its output and gradients as the reference; ``max_abs_diff`` is the largest
|device - cpu| over its first float output, ``numerics.backward`` the same over parameter
gradients. Models past the tolerance fail with the reason ``numerics``, unless a second
CPU run differs from the first too: those are ``nondeterministic``, shown apart and not
judged, or the gap is within a small multiple of the CPU's own run-to-run noise
(``within_noise``), or within what the device's declared float32 math allows against a
float64 run (``within_precision``: a TF32 device's TF32 error). What went past the tolerance is read from the record's typed field
(``numerics.over``: ``output`` or ``gradient``), never from messages.
"""

from __future__ import annotations

import math
from typing import Any

import pandas as pd

from sweeper.checks.tolerances import tolerance_for
from sweeper.report.aggregate import weight
from sweeper.report.load import SweepData

# Upper bounds of the buckets after "identical" (0); the last bucket is everything above.
BOUNDS = (1e-6, 1e-5, 1e-4, 1e-3)
WORST = 5  # report.md keeps it short: index.html sorts every model by its difference


def bucket_label(upper: float | None, lower: float | None) -> str:
    """``0 (identical)``, ``≤ 1e-06``, ``> 0.001``: the text of one bucket."""
    if upper == 0:
        return "0 (identical)"
    if upper is None:
        return f"> {lower:g}"
    return f"≤ {upper:g}"


def numerics(data: SweepData) -> dict[str, Any]:
    """Models compared, the distribution of differences, and the largest ones.

    A model whose output is not finite on one side has no number to place (``NaN``):
    it counts as compared, in its own bucket, and leads the largest differences.
    """
    m = data.models
    over = set(m.loc[m["numerics_over"] == "output", "key"])
    random = m["nondeterministic_diff"].notna()
    diffs_all = m["max_abs_diff"]
    compared = m[(diffs_all.notna() | m["key"].isin(over)) & ~random]
    diffs = compared["max_abs_diff"]
    edges = [(0.0, None), *zip(BOUNDS, (0.0, *BOUNDS[:-1]), strict=True), (None, BOUNDS[-1])]
    rows = []
    for upper, lower in edges:
        if upper == 0:
            inside = diffs == 0
        elif upper is None:
            inside = diffs > lower
        else:
            inside = (diffs > lower) & (diffs <= upper)
        rows.append(_bucket(bucket_label(upper, lower), compared[inside]))
    rows.append(_bucket("not finite", compared[diffs.isna()]))
    worst = compared[(diffs > 0) | diffs.isna()].assign(
        over_tolerance=lambda f: f["key"].isin(over), not_finite=lambda f: f["max_abs_diff"].isna()
    )
    worst = worst.sort_values(["over_tolerance", "not_finite", "max_abs_diff", "key"],
                              ascending=[False, False, False, True]).head(WORST)
    dtype = data.meta.setting("dtype") or "float32"
    atol = data.meta.setting("atol")
    tol = tolerance_for(dtype, atol=atol) if atol is not None else None
    return {
        "compared": len(compared),
        "identical": int((diffs == 0).sum()),
        "over_tolerance": len(over),
        "within_noise": int(m["within_noise"].astype(bool).sum()),
        "within_precision": int(m["within_precision"].astype(bool).sum()),
        "atol": tol.atol if tol else None,
        "rtol": tol.rtol if tol else None,
        "dtype": dtype,
        "buckets": pd.DataFrame(rows),
        "worst": worst[["model_id", "downloads", "max_abs_diff", "status", "reason_kind", "over_tolerance"]],
        **_gradients(m, over, data),
        "nondeterministic": m[random].sort_values(["nondeterministic_diff", "key"], ascending=[False, True])[
            ["model_id", "downloads", "max_abs_diff", "nondeterministic_diff"]],
    }


def _gradients(m: pd.DataFrame, over: set[str], data: SweepData) -> dict[str, Any]:
    """Models whose gradients were compared, how many are past the tolerance, the worst."""
    rel = m["grad_max_rel_diff"]
    grads = m[rel.notna()]
    worst = grads.loc[rel[rel.notna()].idxmax()] if len(grads) else None
    return {
        "grads_compared": len(grads),
        "grads_over_tolerance": int((m["numerics_over"] == "gradient").sum()),
        "grads_worst": None if worst is None else {"model_id": worst["model_id"], "max_rel": _finite(worst["grad_max_rel_diff"])},
    }


def _finite(value: Any) -> float | None:
    number = float(value)
    return number if math.isfinite(number) else None


def _bucket(label: str, models: pd.DataFrame) -> dict[str, Any]:
    return {"difference": label, "models": len(models), "downloads": int(weight(models).sum())}
