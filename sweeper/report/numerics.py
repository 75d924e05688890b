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
from sweeper.report.escape import compact, md, model_link, num, table
from sweeper.report.load import SweepData
from sweeper.report.tables import align_for

# Upper bounds of the buckets after "identical" (0); the last bucket is everything above.
BOUNDS = (1e-6, 1e-5, 1e-4, 1e-3)
WORST = 5  # summary.json's largest differences; index.html sorts every model by its difference
RANKED = 100  # the largest differences on the details page (report.md shows its row budget of them)


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
    ranked = worst.sort_values(["over_tolerance", "not_finite", "max_abs_diff", "key"],
                               ascending=[False, False, False, True]).head(RANKED)
    columns = ["model_id", "downloads", "max_abs_diff", "status", "reason_kind", "over_tolerance"]
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
        "worst": ranked.head(WORST)[columns],
        "ranked": ranked[columns],  # a frame: summary.json keeps ``worst`` alone
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


def render(n: dict[str, Any], *, weighted: bool, link: bool, rows: int | None = None) -> str:
    """The spread of max |device − cpu| over forward outputs, the models furthest off and the
    nondeterministic ones: ``rows`` of each list (report.md's budget), or all that ``numerics``
    keeps (``None``: the details page)."""
    if not n["compared"]:
        return "_No model ran its forward on both the device and the CPU._" + _grads_and_random(n, weighted, link, rows)
    tolerance = ""
    if n.get("atol") is not None:
        rtol = f", rtol {n['rtol']:g}" if n.get("rtol") not in (None, n["atol"]) else ""
        tolerance = f" (atol {n['atol']:g}{rtol} × the output's scale, {md(n.get('dtype') or 'float32')})"
    extra = (n.get("within_noise") or 0) + (n.get("within_precision") or 0)
    intro = (f"{num(n['compared'])} models ran their forward on the device and on the CPU "
             "(the difference is the largest |device − cpu| over the float outputs); "
             f"{num(n['identical'])} match bit for bit, and {num(n['over_tolerance'])} fail with `numerics`: past the "
             f"tolerance{tolerance} and past what the CPU's own error and the device's declared math allow"
             + (f" (the {num(extra)} past the tolerance but within them are below)." if extra else ")."))
    spread = _table(["max abs difference", "models", "downloads"],
                    [[r.difference, num(r.models), compact(r.downloads)] for r in n["buckets"].itertuples(index=False)],
                    weighted)
    parts = [intro, spread]
    ranked = n["ranked"] if rows is None else n["ranked"].head(rows)
    if not ranked.empty:
        parts.append("The largest differences:\n\n" + _table(
            ["model", "downloads", "max abs difference", "outcome"],
            [[model_link(r.model_id, link=link), compact(r.downloads), _diff(r.max_abs_diff), _outcome(r)]
             for r in ranked.itertuples(index=False)], weighted))
    return "\n\n".join(parts) + _grads_and_random(n, weighted, link, rows)


def _outcome(r: Any) -> str:
    if r.over_tolerance:
        return "over tolerance"
    return f"{r.status}" + (f" ({md(r.reason_kind)})" if isinstance(r.reason_kind, str) else "")


def _table(headers: list[str], rows: list[list[str]], weighted: bool) -> str:
    """A table without its downloads column when the sweep has no download counts."""
    keep = [i for i, h in enumerate(headers) if weighted or h != "downloads"]
    shown = [headers[i] for i in keep]
    return table(shown, [[row[i] for i in keep] for row in rows], align_for(shown))


def _grads_and_random(n: dict[str, Any], weighted: bool, link: bool, rows: int | None) -> str:
    """Gradient comparisons and nondeterministic models (``rows`` of them), when the sweep has any."""
    parts = []
    if n.get("within_noise"):
        parts.append(f"{num(n['within_noise'])} model(s) differ past the tolerance but within a small multiple of the "
                     "CPU reference's own error (a second CPU run with the same seed; in float32 sweeps also the "
                     "distance of both results from a float64 CPU run): recorded as `numerics.within_noise`, "
                     "not failures.")
    if n.get("within_precision"):
        parts.append(f"{num(n['within_precision'])} model(s) differ past the tolerance but within the device's declared "
                     "float32 math (their distance from a float64 CPU run is within a small multiple of a CPU run "
                     "computing in that math, e.g. TF32 convolutions): recorded as `numerics.within_precision`, "
                     "not failures; `--strict-float32` shows them in exact float32.")
    if n.get("grads_compared"):
        worst = n["grads_worst"]
        parts.append(f"Gradients after backward: {num(n['grads_compared'])} models compared with the CPU's, "
                     f"{num(n['grads_over_tolerance'])} past the tolerance and fail with `numerics` on the backward "
                     f"stage; the largest relative difference is {_diff(worst['max_rel'])} "
                     f"({model_link(worst['model_id'], link=link)}).")
    random = n.get("nondeterministic")
    if random is not None and len(random):
        shown = random if rows is None else random.head(rows)
        listed = _table(["model", "downloads", "device − cpu", "cpu − cpu"],
                        [[model_link(r.model_id, link=link), compact(r.downloads), _diff(r.max_abs_diff),
                          _diff(r.nondeterministic_diff)] for r in shown.itertuples(index=False)], weighted)
        parts.append(f"{num(len(random))} nondeterministic models: two CPU runs differ past the tolerance (their "
                     "output moves with the RNG state), so the device is not judged on them and they do not fail:"
                     f"\n\n{listed}")
    return "".join(f"\n\n{p}" for p in parts)


def _diff(value: Any) -> str:
    return "not finite" if value is None or pd.isna(value) else f"{value:.3g}"
