"""The op-lowering roadmap: which operators to lower first, by the downloads they block.

Only device-origin blockers count: a lowering-tool failure, our harness's or the model's
own are listed elsewhere, and a model they block can never be freed by lowering an op.
Feature gaps of the device (dynamic shapes, dtypes, sparse, ...) are ranked apart. The
plan that orders fixes of the device and the lowering tool together is ``lowering_plan``.

A failing model's remaining blockers are its ``blockers`` (or its first ``reason``). An
op blocks a model when any blocker names it; lowering the op alone makes the model pass
when every blocker names that op. Blockers without an op (a dtype, numerics, a crash)
keep a model failing whatever gets lowered, so such models never count as unlocked.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass

import pandas as pd

from sweeper.report.aggregate import grouped, ranked, weight
from sweeper.report.load import SweepData

OPS_WITH_MODELS = 10  # top ops whose blocked models are listed
MODELS_PER_OP = 50


def model_info(data: SweepData) -> pd.DataFrame:
    """The model columns a long table joins by ``row``."""
    return data.models[["key", "model_id", "downloads", "rank", "build"]]


@dataclass(frozen=True)
class Signature:
    """Failing models that share the same blocking ops (and op-less blockers or not)."""

    ops: frozenset[str]
    other: bool  # an op-less blocker too: lowering ops alone cannot make these pass
    models: int
    weight: int  # downloads, or the model count when the sweep has no downloads


def signatures(data: SweepData) -> list[Signature]:
    """Failing models grouped by their set of blocking ops, in a fixed order."""
    fail = data.models[data.models["category"] == "device"]
    w = weight(fail) if data.has_downloads else pd.Series(1, index=fail.index)
    per_row: dict[int, tuple[set[str], list[bool]]] = {r: (set(), [False]) for r in fail.index}
    b = data.blockers
    for row, op, is_op in zip(b["row"].tolist(), b["op"].tolist(), op_blockers(b).tolist()):
        entry = per_row.get(row)
        if entry is None:
            continue
        if is_op:
            entry[0].add(op)
        else:
            entry[1][0] = True
    acc: dict[tuple[frozenset[str], bool], list[int]] = defaultdict(lambda: [0, 0])
    for row, wt in zip(fail.index, w.tolist()):
        ops, other = per_row[row]
        slot = acc[(frozenset(ops), other[0] or not ops)]
        slot[0] += 1
        slot[1] += int(wt)
    sigs = [Signature(ops, other, n, wt) for (ops, other), (n, wt) in acc.items()]
    return sorted(sigs, key=lambda s: (sorted(s.ops), s.other))


# Blocker kinds an op's lowering removes; other device kinds naming an op (a dynamic shape
# from ``nonzero``, a dtype) are feature gaps.
OP_KINDS = frozenset({"unsupported_op", "compile_error"})


def op_blockers(blockers: pd.DataFrame) -> pd.Series:
    """Which blockers a roadmap op stands for: the device's, of an op kind, naming an op."""
    named = blockers["op"].map(lambda o: isinstance(o, str) and o != "").astype(bool)
    return named & (blockers["origin"] == "device") & blockers["kind"].isin(OP_KINDS)


def feature_ranking(data: SweepData) -> pd.DataFrame:
    """Device gaps that are not an op to lower (dynamic shapes, dtypes, sparse, forward AD,
    numerics, ...), by kind and what they name: models blocked, downloads, examples."""
    bl = data.blockers
    b = bl[data.failing_rows(bl) & (bl["origin"] == "device") & ~op_blockers(bl)].fillna({"op": ""})
    cols = ["kind", "op", "models", "downloads", "examples"]
    if b.empty:
        return pd.DataFrame(columns=cols)
    pairs = b.drop_duplicates(["row", "kind", "op"])[["row", "kind", "op"]].join(model_info(data), on="row")
    return grouped(pairs, ["kind", "op"])[cols]


def op_ranking(data: SweepData, sigs: list[Signature] | None = None) -> pd.DataFrame:
    """Ops ranked by downloads blocked: models blocked, and what lowering it alone frees."""
    cols = ["op", "kinds", "models", "builds", "downloads", "unlocked_models", "unlocked_downloads", "examples"]
    bl = data.blockers
    b = bl[data.failing_rows(bl) & op_blockers(bl)]
    if b.empty:
        return pd.DataFrame(columns=cols)
    kinds = b.groupby("op")["kind"].agg(lambda k: ", ".join(sorted(set(k))))
    pairs = b.drop_duplicates(["row", "op"])[["row", "op"]].join(model_info(data), on="row")
    out = grouped(pairs, ["op"])
    unlocked_m: dict[str, int] = defaultdict(int)
    unlocked_w: dict[str, int] = defaultdict(int)
    for sig in signatures(data) if sigs is None else sigs:
        if len(sig.ops) == 1 and not sig.other:
            (op,) = sig.ops
            unlocked_m[op] += sig.models
            unlocked_w[op] += sig.weight
    out["kinds"] = out["op"].map(kinds)
    out["builds"] = out["op"].map(pairs.groupby("op")["build"].nunique())
    out["unlocked_models"] = out["op"].map(lambda o: unlocked_m.get(o, 0))
    out["unlocked_downloads"] = out["op"].map(lambda o: unlocked_w.get(o, 0) if data.has_downloads else 0)
    order = ["downloads", "models", "unlocked_downloads", "op"]
    return out.sort_values(order, ascending=[False, False, False, True], kind="stable")[cols]


def models_per_op(data: SweepData, ops: list[str], limit: int = MODELS_PER_OP) -> dict[str, tuple[pd.DataFrame, int]]:
    """For each op: the failing models it blocks, most downloaded first (at most ``limit``,
    with their other blockers), and how many there are in all."""
    b = data.blockers[data.failing_rows(data.blockers)]
    blocking: dict[int, tuple[list[str], list[str]]] = defaultdict(lambda: ([], []))
    for row, kind, op in zip(b["row"].tolist(), b["kind"].tolist(), b["op"].tolist()):
        has_op = isinstance(op, str) and bool(op)
        found = blocking[row][0 if has_op else 1]
        label = op if has_op else kind
        if label not in found:
            found.append(label)
    pairs = b.loc[b["op"].isin(set(ops)), ["row", "op"]].drop_duplicates().join(model_info(data), on="row")
    out: dict[str, tuple[pd.DataFrame, int]] = {}
    for op, group in ranked(pairs).groupby("op", sort=False):
        top = group.head(limit)
        other_ops = [[o for o in blocking[r][0] if o != op] for r in top["row"]]
        other_reasons = [list(blocking[r][1]) for r in top["row"]]
        frame = top.assign(other_ops=other_ops, other_reasons=other_reasons)
        out[str(op)] = (frame[["model_id", "downloads", "other_ops", "other_reasons"]], len(group))
    return {op: out[op] for op in ops if op in out}
