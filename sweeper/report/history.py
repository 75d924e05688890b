"""A history of sweeps: the figures of each night, over the same models.

Averages over whichever models a night happened to hold mislead (a catalog grows, a night
dies half-way), so every trend here is over the models present in *every* night (the
``common`` models); what each night added or lost is said apart. Per night:

- end-to-end coverage: the share of the common models' downloads (models, for a catalog
  without downloads) that pass, over those in a PyTorch format (``aggregate.in_catalog``,
  the Summary's denominator), each night's own download counts;
- the device pass rate: passing common models over those that pass or fail for the
  device's sake (``load.TRIED``), as the report's;
- each lowering-plan item's blocked downloads: the downloads of failing common models
  with a blocker of that item (``lowering_plan.blocker_items``);
- the outcome changes since the night before, as ``sweep diff`` finds them (``diff.compare``,
  with why each check ran again);
- each blocker's first and last night seen.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

import pandas as pd

from sweeper.report import lowering_plan
from sweeper.report.aggregate import in_catalog, weight
from sweeper.report.diff import SAME_CHECK, DiffResult, compare
from sweeper.report.findings import GRAPH_KINDS
from sweeper.report.history_runs import Night
from sweeper.report.load import TRIED

PLAN_ITEMS = 12  # plan items followed across nights


@dataclass
class History:
    """Everything history.md, history.html and the charts show."""

    nights: list[Night]
    common: set[str]
    weighted: bool  # every night carries download counts: shares are of downloads
    figures: pd.DataFrame  # one row per night (see ``night_figures``)
    items: pd.DataFrame  # item, label, then one column of blocked weight per night label
    changes: list[DiffResult | None]  # per night, the diff against the night before (None for the first)
    blockers: pd.DataFrame  # blocker, first, last, nights, models_now
    flips: pd.DataFrame  # night, model_id, before, after: same fingerprint, another verdict
    rechecks: pd.DataFrame = field(default_factory=pd.DataFrame)  # see ``history_flaky``

    @property
    def labels(self) -> list[str]:
        return [n.label for n in self.nights]


def build_history(nights: list[Night]) -> History:
    """The history of ``nights`` (oldest first)."""
    from sweeper.report.history_flaky import recheck_table

    keys = [set(n.data.models["key"]) for n in nights]
    common = set.intersection(*keys) if keys else set()
    weighted = all(n.data.has_downloads for n in nights)
    changes: list[DiffResult | None] = [None]
    for before, after in zip(nights, nights[1:]):
        changes.append(compare(before.data, after.data, folders=(before.path, after.path)))
    return History(
        nights=nights,
        common=common,
        weighted=weighted,
        figures=pd.DataFrame([night_figures(n, common, weighted, keys[i - 1] if i else None)
                              for i, n in enumerate(nights)]),
        items=plan_items(nights, common, weighted),
        changes=changes,
        blockers=blocker_spans(nights),
        flips=same_check_flips(nights, changes),
        rechecks=recheck_table(nights),
    )


def night_figures(night: Night, common: set[str], weighted: bool, before: set[str] | None) -> dict[str, Any]:
    """One night's row: its models, those added and gone since the night before, and the
    end-to-end coverage and device pass rate over the common models."""
    m = night.data.models
    keys = set(m["key"])
    same = m[m["key"].isin(common)]
    w = weight(same) if weighted else pd.Series(1, index=same.index)
    inside = in_catalog(same)
    total = int(w[inside].sum())
    passing = int(w[inside & (same["category"] == "pass")].sum())
    passed = int((same["category"] == "pass").sum())
    tried = int(same["category"].isin(TRIED).sum())
    return {
        "night": night.label,
        "date": night.date,
        "models": len(m),
        "added": len(keys - before) if before is not None else 0,
        "gone": len(before - keys) if before is not None else 0,
        "common": len(same),
        "passing": passed,
        "tried": tried,
        "pass_rate": passed / tried if tried else None,
        "covered": passing,
        "total": total,
        "coverage": passing / total if total else None,
    }


def item_rows(night: Night, common: set[str], weighted: bool) -> dict[Any, int]:
    """Per lowering-plan item, the weight (downloads, else models) of the failing common
    models with a blocker of that item."""
    m = night.data.models
    keep = (m["key"].isin(common) & in_catalog(m) & (m["category"] != "pass")).to_numpy()
    w = (weight(m) if weighted else pd.Series(1, index=m.index)).tolist()
    rows: dict[Any, set[int]] = defaultdict(set)
    for row, item, _ in lowering_plan.blocker_items(night.data):
        if item is not None and keep[row]:
            rows[item].add(row)
    return {item: sum(int(w[r]) for r in found) for item, found in rows.items()}


def plan_items(nights: list[Night], common: set[str], weighted: bool) -> pd.DataFrame:
    """The items of any night's lowering plan (the first ``PLAN_ITEMS``, the newest night's
    order first), with their blocked weight each night."""
    per_night = [item_rows(n, common, weighted) for n in nights]
    chosen: list[Any] = []
    for night in reversed(nights):
        for step in lowering_plan.plan(night.data)["steps"]:
            chosen += [item for item in _step_items(step) if item not in chosen]
    rows = []
    for item in chosen[:PLAN_ITEMS]:
        row: dict[str, Any] = {"item": _item_name(item), "label": _item_label(item)}
        row.update({n.label: found.get(item, 0) for n, found in zip(nights, per_night)})
        rows.append(row)
    return pd.DataFrame(rows, columns=["item", "label", *[n.label for n in nights]])


def _step_items(step: dict[str, Any]) -> list[Any]:
    """The items a plan step fixes: its causes (a step may fix several together), or, as
    earlier plans named them, one ``(op | graph, name)`` pair."""
    causes = step.get("causes")
    if causes:
        return list(causes)
    return [("graph" if step.get("graph") else "op", step["item"])]


def _item_name(item: Any) -> str:
    """An item in plain words."""
    return item.text() if hasattr(item, "text") else str(item[1])


def _item_label(item: Any) -> str:
    """An item as the plan's rows name it (Markdown)."""
    if hasattr(item, "label"):
        return item.label()
    return lowering_plan.label({"item": item[1], "graph": item[0] == "graph"})


def blocker_name(kind: str, op: object, message: str) -> str:
    """A blocker as history follows it: its kind and op; an op-less lowering-tool failure
    by its graph (or signature); any other op-less blocker by its kind alone."""
    if isinstance(op, str) and op:
        return f"{kind} {op}"
    if kind in GRAPH_KINDS:
        return f"{kind} {lowering_plan.graph_of(message)}"
    return kind


def blocker_spans(nights: list[Night]) -> pd.DataFrame:
    """Each blocker of a failing model: the first and last night it was seen, on how many
    nights, and how many models it blocks on the newest night."""
    first: dict[str, str] = {}
    last: dict[str, str] = {}
    count: dict[str, int] = defaultdict(int)
    now: dict[str, int] = {}
    for night in nights:
        b = night.data.blockers
        models: dict[str, set[str]] = defaultdict(set)
        for key, kind, op, message in zip(b["key"], b["kind"], b["op"], b["message"]):
            models[blocker_name(str(kind), op, str(message or ""))].add(key)
        for name in models:
            first.setdefault(name, night.label)
            last[name] = night.label
            count[name] += 1
        now = {name: len(keys) for name, keys in models.items()}
    newest = nights[-1].label if nights else ""
    rows = [{"blocker": name, "first": first[name], "last": last[name], "nights": count[name],
             "models_now": now.get(name, 0), "open": last[name] == newest} for name in first]
    frame = pd.DataFrame(rows, columns=["blocker", "first", "last", "nights", "models_now", "open"])
    return frame.sort_values(["open", "models_now", "blocker"], ascending=[False, False, True], kind="stable")


def same_check_flips(nights: list[Night], changes: list[DiffResult | None]) -> pd.DataFrame:
    """Models whose outcome changed from one night to the next under the same check
    fingerprint: a verdict that moved with nothing in its check changing (a flaky verdict)."""
    rows = []
    for night, result in zip(nights, changes):
        if result is None:
            continue
        for frame in (result.regressed, result.fixed, result.changed, result.unavailable):
            if frame.empty or "why" not in frame.columns:
                continue
            for r in frame[frame["why"] == SAME_CHECK].itertuples(index=False):
                rows.append({"night": night.label, "model_id": r.model_id_new, "before": r.category_old,
                             "after": r.category_new, "reason": r.reason_kind_new, "op": r.reason_op_new})
    frame = pd.DataFrame(rows, columns=["night", "model_id", "before", "after", "reason", "op"])
    return frame.drop_duplicates(["night", "model_id"])
