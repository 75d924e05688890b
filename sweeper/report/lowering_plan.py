"""The lowering plan: what to fix first, in order, and what each fix would make pass.

An item is one thing a platform team fixes. Most are an op with its backward (``aten::X``
and ``aten::X_backward``, any overload spelling): a model that trains needs both, so
lowering a forward whose backward still fails frees nothing. The op fails on the device
(an op kind it refuses or fails compiling, ``roadmap.OP_KINDS``) or in the lowering tool
(an op the device calls native that the tool fails on), and *whose* says which. The rest
are graphs the lowering tool fails on without naming an op, grouped as the "Lowering tool
findings" section groups them (``findings``: the reproducer's graph hash, else the
failure's signature).

A model is freed when every blocker it has belongs to a fixed item. Any other blocker (a
device dtype, numerics, a crash, a feature gap, the harness's or the model's own failure,
the environment's) keeps it failing whatever is fixed. Shares divide by the catalog's
downloads without formats that are not PyTorch (``aggregate.in_catalog``), as the Summary's.
"""

from __future__ import annotations

import re
from collections import defaultdict
from typing import Any

import pandas as pd

from sweeper.report import findings
from sweeper.report.aggregate import in_catalog, weight
from sweeper.report.escape import code, compact, md, num, pct
from sweeper.report.load import SweepData
from sweeper.report.roadmap import op_blockers
from sweeper.report.tables import MESSAGE_CHARS, long_table

MAX_STEPS = 25
SHOWN_STEPS = 15  # rows before the rest collapses
DEVICE, TOOL = "device", "lowering tool"
# ``_backward`` and what some backward ops add after it (``_softmax_backward_data``).
_BACKWARD = re.compile(r"_backward(?:_[a-z0-9_]+)?$")

Item = tuple[str, str]  # ("op", base op name) or ("graph", graph key or failure signature)


def base_op(op: str) -> str:
    """The op an item is named by: no overload, no ``_backward``
    (``aten::max_pool2d_with_indices_backward.default`` -> ``aten::max_pool2d_with_indices``)."""
    namespace, sep, name = op.rpartition("::")
    name = name.split(".", 1)[0]
    return f"{namespace}{sep}{_BACKWARD.sub('', name) or name}"


def blocker_items(data: SweepData) -> list[tuple[int, Item | None, str]]:
    """Each blocker as (row, its item or None when no fix covers it, whose it is)."""
    b = data.blockers
    if b.empty:
        return []
    ops = b["op"].map(lambda o: o if isinstance(o, str) else "").tolist()
    tool = (b["origin"] == "lowering_tool").tolist()
    device_op = op_blockers(b).tolist()
    out: list[tuple[int, Item | None, str]] = []
    for row, op, message, is_tool, is_device_op in zip(b["row"].tolist(), ops, b["message"].tolist(), tool, device_op):
        if is_tool and not op:
            item: Item | None = ("graph", graph_of(message))
        elif is_tool or is_device_op:
            item = ("op", base_op(op))
        else:
            item = None
        out.append((row, item, TOOL if is_tool else DEVICE))
    return out


def graph_of(message: str) -> str:
    """An op-less lowering-tool failure's group: its reproducer's graph, else its signature."""
    return findings.graph_key(findings.reproducer(message)) or findings.signature(message)


def freeable(data: SweepData) -> tuple[dict[frozenset[Item], list[int]], dict[Item, set[str]]]:
    """Failing catalog models whose every blocker is an item's, grouped by their set of
    items ([models, weight] each), and whose each item is (device, lowering tool)."""
    m = data.models
    candidate = (in_catalog(m) & (m["category"] != "pass")).to_numpy()
    w = weight(m).tolist() if data.has_downloads else [1] * len(m)
    items: dict[int, set[Item]] = defaultdict(set)
    stuck: set[int] = set()
    whose: dict[Item, set[str]] = defaultdict(set)
    for row, item, who in blocker_items(data):
        if item is None:
            stuck.add(row)
        elif candidate[row]:
            items[row].add(item)
            whose[item].add(who)
    groups: dict[frozenset[Item], list[int]] = defaultdict(lambda: [0, 0])
    for row, its in items.items():
        if row not in stuck:
            groups[frozenset(its)][0] += 1
            groups[frozenset(its)][1] += int(w[row])
    return dict(sorted(groups.items(), key=lambda g: sorted(g[0]))), whose


def plan(data: SweepData, max_steps: int = MAX_STEPS) -> dict[str, Any]:
    """Fix one item at a time, each step taking the item that frees the most downloads (ties,
    and steps that free nothing yet, go to the item with most of the blocked weight shared
    among each model's remaining items); stop when nothing is left to free or at ``max_steps``."""
    m = data.models
    weighted = data.has_downloads
    inside = in_catalog(m)
    w = weight(m) if weighted else pd.Series(1, index=m.index)
    total = int(w[inside].sum())
    start = int(w[inside & (m["category"] == "pass")].sum())
    groups, whose = freeable(data)
    remaining = dict(groups)
    fixed: set[Item] = set()
    steps: list[dict[str, Any]] = []
    freed_models = freed_weight = 0
    while remaining and len(steps) < max_steps:
        item = _best(remaining, fixed)
        fixed.add(item)
        freed = [k for k in remaining if k <= fixed]
        models, wt = sum(remaining[k][0] for k in freed), sum(remaining[k][1] for k in freed)
        for k in freed:
            del remaining[k]
        freed_models, freed_weight = freed_models + models, freed_weight + wt
        steps.append({
            "step": len(steps) + 1, "item": item[1], "graph": item[0] == "graph", "whose": _whose(whose[item]),
            "models_freed": models, "weight_freed": wt, "models_freed_total": freed_models,
            "weight_freed_total": freed_weight, "coverage": _share(start + freed_weight, total),
        })  # fmt: skip
    while steps and not steps[-1]["models_freed"]:  # cut short: the last fixes free nothing yet
        steps.pop()
    ceiling = start + sum(wt for _, wt in groups.values())
    return {
        "weighted": weighted,
        "total": total,
        "start": _share(start, total),
        "ceiling": _share(ceiling, total),
        "ceiling_models": sum(n for n, _ in groups.values()),
        "items": len(set().union(*groups)) if groups else 0,
        "steps": steps,
    }


def _best(remaining: dict[frozenset[Item], list[int]], fixed: set[Item]) -> Item:
    freed: dict[Item, int] = defaultdict(int)
    share: dict[Item, float] = defaultdict(float)
    for items, (_, wt) in remaining.items():
        left = items - fixed
        if len(left) == 1:
            freed[next(iter(left))] += wt
        for item in left:
            share[item] += wt / len(left)
    return min(share, key=lambda item: (-freed.get(item, 0), -share[item], item))


def _whose(who: set[str]) -> list[str]:
    return [w for w in (DEVICE, TOOL) if w in who]


def _share(part: int, total: int) -> float | None:
    return part / total if total else None


def label(step: dict[str, Any]) -> str:
    """An item as the plan's row names it: ``aten::X`` (+ backward), or the failing graph."""
    if not step["graph"]:
        return f"{code(step['item'])} (+ backward)"
    key = step["item"]
    if findings.graph_key(f"{key}.py") == key:
        return f"{md(findings.WHOLE_GRAPH)} {code(key)}"
    return f"{md(findings.WHOLE_GRAPH)}: {md(key, MESSAGE_CHARS)}"


def render(p: dict[str, Any]) -> str:
    """The plan's text and its table, one row per step."""
    unit = "downloads" if p["weighted"] else "models"
    if not p["steps"]:
        return f"_No fix of ops or lowering-tool failures alone would make another model pass._ {_today(p, unit)}"
    head = (
        f"Fix these items in this order, each step taking the one that makes the most {unit} pass. An item is an "
        "op with its backward (`aten::X` and `aten::X_backward`, any overload), for the device to lower or the "
        "lowering tool to get right (*whose*), or a graph the lowering tool fails on without naming an op (as in "
        "*Lowering tool findings*). A model passes once every blocker it has belongs to a fixed item; any other "
        "blocker (dtypes, numerics, crashes, feature gaps, the harness's or the model's own failures) keeps it "
        f"failing. {_today(p, unit)} Fixing every item would reach at most {pct(p['ceiling'])} "
        f"({num(p['ceiling_models'])} more models)."
    )
    if p["items"] > len(p["steps"]):
        more = p["items"] - len(p["steps"])
        head += f" The table stops at {num(len(p['steps']))} steps; {num(more)} more items would free the rest."
    headers = ["k", "fix", "whose", "models freed", "downloads freed", "models freed in all", "downloads freed in all",
               "coverage after"]  # fmt: skip
    keep = headers if p["weighted"] else [h for h in headers if "downloads" not in h]
    rows = []
    for s in p["steps"]:
        cells = dict(zip(headers, [s["step"], label(s), ", ".join(s["whose"]), num(s["models_freed"]),
                                   compact(s["weight_freed"]), num(s["models_freed_total"]),
                                   compact(s["weight_freed_total"]), pct(s["coverage"])]))  # fmt: skip
        rows.append([cells[h] for h in keep])
    return head + "\n\n" + long_table(keep, rows, "steps", shown=SHOWN_STEPS)


def _today(p: dict[str, Any], unit: str) -> str:
    """Where the plan starts, and what it divides by (the Summary's denominator)."""
    summary = ", as in the Summary" if p["weighted"] else ""
    return (
        f"Shares are of this catalog's {unit} without the formats that are not PyTorch (named apart, never "
        f"tried){summary}: today {pct(p['start'])} run end to end."
    )
