"""The plan: what to fix first, in order, and what each fix would make pass.

An item is a root cause (``root_causes.Cause``): an op with its backward for the device to
lower, a lowering-tool bug by its diagnostic, a dtype or a feature the device lacks. Some
causes free models only together (a complex64 front end needs the dtype and the FFT ops'
lowering): such a *bundle* is one step, its causes fixed together.

A model is freed when every blocker it has belongs to a fixed cause. Any other blocker
(numerics, a crash, the harness's or the model's own failure, the environment's) keeps it
failing whatever is fixed. Shares divide by the catalog's downloads without formats that
are not PyTorch (``aggregate.in_catalog``), as the Summary's.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

import pandas as pd

from sweeper.report import findings
from sweeper.report.aggregate import in_catalog, weight
from sweeper.report.escape import compact, num, pct
from sweeper.report.load import SweepData
from sweeper.report.root_causes import DEVICE, TOOL, Cause, blocker_causes, reproducers
from sweeper.report.tables import long_table, repro_link

MAX_STEPS = 25
SHOWN_STEPS = 15  # rows before the rest collapses
MAX_BUNDLE = 3  # causes fixed together in one step, at most

Item = Cause


def blocker_items(data: SweepData) -> list[tuple[int, Cause | None, str]]:
    """Each blocker as (row, its cause or None when no fix covers it, whose it is)."""
    return [(row, cause, cause.whose if cause else DEVICE) for row, cause in blocker_causes(data)]


def graph_of(message: str) -> str:
    """An op-less lowering-tool failure's group: its reproducer's graph, else its signature."""
    return findings.graph_key(findings.reproducer(message)) or findings.signature(message)


def freeable(data: SweepData) -> dict[frozenset[Cause], list[int]]:
    """Failing catalog models whose every blocker has a cause, grouped by their set of
    causes ([models, weight] each)."""
    m = data.models
    candidate = (in_catalog(m) & (m["category"] != "pass")).to_numpy()
    w = weight(m).tolist() if data.has_downloads else [1] * len(m)
    causes: dict[int, set[Cause]] = defaultdict(set)
    stuck: set[int] = set()
    for row, cause in blocker_causes(data):
        if cause is None:
            stuck.add(row)
        elif candidate[row]:
            causes[row].add(cause)
    groups: dict[frozenset[Cause], list[int]] = defaultdict(lambda: [0, 0])
    for row, its in causes.items():
        if row not in stuck:
            groups[frozenset(its)][0] += 1
            groups[frozenset(its)][1] += int(w[row])
    return dict(sorted(groups.items(), key=lambda g: sorted(g[0])))


def plan(data: SweepData, max_steps: int = MAX_STEPS) -> dict[str, Any]:
    """Fix one cause (or one bundle) at a time, each step taking the one that frees the most
    downloads per cause fixed (ties: fewer causes, then most of the blocked weight shared among each model's
    remaining causes); stop when no cause or bundle of up to ``MAX_BUNDLE`` frees anything,
    or at ``max_steps``."""
    m = data.models
    weighted = data.has_downloads
    inside = in_catalog(m)
    w = weight(m) if weighted else pd.Series(1, index=m.index)
    total = int(w[inside].sum())
    start = int(w[inside & (m["category"] == "pass")].sum())
    groups = freeable(data)
    repros = reproducers(data)
    remaining = dict(groups)
    fixed: set[Cause] = set()
    steps: list[dict[str, Any]] = []
    freed_models = freed_weight = 0
    while remaining and len(steps) < max_steps:
        bundle, wt = _best(remaining, fixed)
        if not wt:
            break
        fixed |= bundle
        freed = [k for k in remaining if k <= fixed]
        models = sum(remaining[k][0] for k in freed)
        for k in freed:
            del remaining[k]
        freed_models, freed_weight = freed_models + models, freed_weight + wt
        causes = sorted(bundle)
        steps.append({
            "step": len(steps) + 1, "causes": causes, "item": " + ".join(c.text() for c in causes),
            "graph": False, "whose": _whose({c.whose for c in causes}), "kinds": [c.kind for c in causes],
            "repros": [repros.get(c, "") for c in causes],
            "models_freed": models, "weight_freed": wt, "models_freed_total": freed_models,
            "weight_freed_total": freed_weight, "coverage": _share(start + freed_weight, total),
        })  # fmt: skip
    ceiling = start + sum(wt for _, wt in groups.values())
    return {
        "weighted": weighted,
        "total": total,
        "start": _share(start, total),
        "ceiling": _share(ceiling, total),
        "ceiling_models": sum(n for n, _ in groups.values()),
        "items": len(set().union(*groups)) if groups else 0,
        "unplanned_models": sum(n for n, _ in remaining.values()),
        "steps": steps,
    }


def _best(remaining: dict[frozenset[Cause], list[int]], fixed: set[Cause]) -> tuple[frozenset[Cause], int]:
    """The cause or bundle to fix next, and the weight it frees."""
    share: dict[Cause, float] = defaultdict(float)
    candidates: set[frozenset[Cause]] = set()
    for causes, (_, wt) in remaining.items():
        left = causes - fixed
        for cause in left:
            share[cause] += wt / len(left)
            candidates.add(frozenset([cause]))
        if len(left) <= MAX_BUNDLE:
            candidates.add(frozenset(left))

    def freed(bundle: frozenset[Cause]) -> int:
        return sum(wt for causes, (_, wt) in remaining.items() if causes - fixed <= bundle)

    scored = [(freed(b), b) for b in candidates]
    # Downloads freed per fix: a bundle of three counts as three fixes.
    wt, bundle = min(scored, key=lambda s: (-s[0] / len(s[1]), len(s[1]), -sum(share[c] for c in s[1]), sorted(s[1])))
    return bundle, wt


def _whose(who: set[str]) -> list[str]:
    return [w for w in (DEVICE, TOOL) if w in who]


def _share(part: int, total: int) -> float | None:
    return part / total if total else None


def label(step: dict[str, Any]) -> str:
    """A step as the plan's row names it: its cause, or its bundle's causes fixed together."""
    causes = step.get("causes") or []
    if len(causes) == 1:
        return causes[0].label()
    return "together: " + " + ".join(c.label() for c in causes)


def repro_cell(step: dict[str, Any]) -> str:
    """Links to the reproducers of a step's lowering-tool causes ('—' when it has none)."""
    links = [repro_link(r) for r in step.get("repros", []) if r]
    return ", ".join(links) or "—"


INTRO = (
    "Root causes in the order that makes the most {unit} pass, each step one fix (or a bundle of fixes that free "
    "models only together): an op with its backward for the device to lower, a lowering-tool bug by its "
    "diagnostic (with the script that reproduces it), a dtype or feature the device lacks. A model passes once "
    "every blocker it has belongs to a fixed cause; numerics, crashes, the harness's and the model's own failures "
    "are no cause here and keep a model failing. {today}"
)


def render(p: dict[str, Any], *, shown: int = SHOWN_STEPS, detail: str = "") -> str:
    """The plan's text and its table, one row per step (the first ``shown``; ``detail``
    names the page with every step)."""
    unit = "downloads" if p["weighted"] else "models"
    if not p["steps"]:
        return f"_No fix of a root cause would make another model pass._ {_today(p, unit)}"
    head = INTRO.format(unit=unit, today=_today(p, unit))
    head += (f" Fixing every cause reaches at most {pct(p['ceiling'])} ({num(p['ceiling_models'])} more models)"
             + (f"; {num(p['unplanned_models'])} of them need bundles of more than {MAX_BUNDLE} causes."
                if p["unplanned_models"] else "."))
    headers = ["k", "fix", "whose", "models freed", "downloads freed", "coverage after", "reproducer"]
    keep = headers if p["weighted"] else [h for h in headers if "downloads" not in h]
    rows = []
    for s in p["steps"]:
        cells = dict(zip(headers, [s["step"], label(s), ", ".join(s["whose"]), num(s["models_freed"]),
                                   compact(s["weight_freed"]), pct(s["coverage"]), repro_cell(s)]))
        rows.append([cells[h] for h in keep])
    table = long_table(keep, rows[:shown], "steps", shown=shown)
    if len(rows) > shown and detail:
        table += f"\n\nAll {num(len(rows))} steps, with each cause's models: [{detail}]({detail})."
    return head + "\n\n" + table


def _today(p: dict[str, Any], unit: str) -> str:
    """Where the plan starts, and what it divides by (the Summary's denominator)."""
    return f"Today {pct(p['start'])} of the PyTorch-format {unit} run end to end."
