"""Numerics: how far each model's forward output on the device is from the CPU's.

The forward stage runs the model on the CPU first and keeps the output as a reference;
``max_abs_diff`` is the largest |device - cpu| over its float outputs. Models whose
difference passes the tolerance fail with the reason ``numerics``.
"""

from __future__ import annotations

from typing import Any

import pandas as pd

from sweeper.report.aggregate import weight
from sweeper.report.load import SweepData

# Upper bounds of the buckets after "identical" (0); the last bucket is everything above.
BOUNDS = (1e-6, 1e-5, 1e-4, 1e-3)
WORST = 10


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
    over = set(data.blockers.loc[data.blockers["kind"] == "numerics", "key"])
    diffs_all = m["max_abs_diff"]
    compared = m[diffs_all.notna() | m["key"].isin(over)]
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
    atol = (data.meta.get("config") or {}).get("atol")
    return {
        "compared": len(compared),
        "identical": int((diffs == 0).sum()),
        "over_tolerance": len(over),
        "atol": atol,
        "buckets": pd.DataFrame(rows),
        "worst": worst[["model_id", "downloads", "max_abs_diff", "status", "reason_kind", "over_tolerance"]],
    }


def _bucket(label: str, models: pd.DataFrame) -> dict[str, Any]:
    return {"difference": label, "models": len(models), "downloads": int(weight(models).sum())}
