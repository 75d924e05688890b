"""Quantized checkpoints: per method, how many ran with their quantization applied and what
became of them, and the ops of the method's kernels that block them on the device."""

from __future__ import annotations

import pandas as pd

from sweeper.report.escape import code, compact, md, num, table
from sweeper.report.load import SweepData

INTRO = (
    "Repos that ship quantized weights (bitsandbytes, GPTQ, AWQ, FP8, ...), by the method their config or, offline, their "
    "id names. Each ran with its method applied to its tiny build (the method's own layers and kernels, judged against "
    "the same quantized model on the CPU), or is counted as not applied with why: never as the float model. A blocking "
    "op of the method's kernels is a cause in Fix next like any other."
)
COLUMNS = ["method", "models", "downloads", "applied", "pass", "device", "lowering_tool", "not_applied", "blocking"]


def table_of(data: SweepData) -> pd.DataFrame:
    """One row per method: models, downloads, how many ran with it applied, their outcomes,
    how many were not applied (and why, the first reason), and the ops that block them."""
    m = data.models[data.models["quant_method"].notna()]
    if m.empty:
        return pd.DataFrame(columns=COLUMNS)
    blockers = data.blockers[data.blockers["row"].isin(m.index)] if not data.blockers.empty else data.blockers
    rows = []
    for method, group in m.groupby("quant_method", sort=False):
        applied = group[group["quant_applied"] == True]  # noqa: E712 - an object column of bools
        held = blockers[blockers["row"].isin(applied.index) & blockers["op"].notna()] if not blockers.empty else blockers
        ops = held.drop_duplicates(["row", "op"])["op"].value_counts() if not held.empty else pd.Series(dtype=int)
        rows.append({
            "method": method, "models": len(group), "downloads": float(group["downloads"].fillna(0).sum()),
            "applied": len(applied), "pass": int((applied["category"] == "pass").sum()),
            "device": int((applied["category"] == "device").sum()),
            "lowering_tool": int((applied["category"] == "lowering_tool").sum()),
            "not_applied": len(group) - len(applied),
            "why": next(iter(group.loc[group["quant_applied"] != True, "reason_message"]), ""),  # noqa: E712
            "blocking": [(op, int(n)) for op, n in ops.head(3).items()],
        })
    return pd.DataFrame(rows).sort_values(["downloads", "models"], ascending=False, kind="stable")


def render(frame: pd.DataFrame, *, weighted: bool) -> str:
    """The Markdown table (empty text when no model is quantized: no section)."""
    if frame.empty:
        return ""
    headers = ["method", "models", *(["downloads"] if weighted else []), "ran with it", "pass", "device fail",
               "lowering tool", "not applied", "ops blocking those that ran"]
    rows = [[code(r.method), num(r.models), *([compact(r.downloads)] if weighted else []), num(r.applied), num(r.pass_),
             num(r.device), num(r.lowering_tool),
             num(r.not_applied) + (f" ({md(r.why)})" if r.not_applied and r.why else ""),
             ", ".join(f"{code(op)} ({num(n)})" for op, n in r.blocking) or "—"]
            for r in frame.rename(columns={"pass": "pass_"}).itertuples()]
    return "\n\n".join([INTRO, table(headers, rows)])
