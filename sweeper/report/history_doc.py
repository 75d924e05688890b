"""history.md: a history of sweeps as Markdown (``sweep history``).

Sections, in order: the nights and the models they share; coverage and the device pass
rate per night; the lowering plan's items per night; what changed each night and why
(``sweep diff``'s findings); each blocker's first and last night; flaky verdicts. The
figures come from ``report.history.History`` alone.
"""

from __future__ import annotations

from typing import Any

import pandas as pd

from sweeper.report.diff import SAME_CHECK, DiffResult
from sweeper.report.escape import code, compact, md, model_link, num, pct, table
from sweeper.report.history import History
from sweeper.report.history_flaky import flake_rates
from sweeper.report.tables import long_table, reason_cell

CHANGE_ROWS = 30  # changed models listed per night before the rest collapses


def render(h: History, *, charts: dict[str, str]) -> str:
    """The whole history.md; ``charts`` maps a chart's role to its path relative to history.md."""
    unit = "downloads" if h.weighted else "models"
    parts = ["# Sweep history", _intro(h, unit)]
    parts += ["## Coverage and device pass rate per night", _trend_text(unit), _figures(h), _chart(charts, "trend")]
    parts += ["## Lowering-plan items per night", _items_text(unit), _items(h, unit), _chart(charts, "items")]
    parts += ["## What changed each night", _changes_text(), *_changes(h)]
    parts += ["## Blockers: first and last night seen", _blockers(h)]
    parts += ["## Flaky verdicts", *_flaky(h)]
    return "\n\n".join(p for p in parts if p) + "\n"


def _intro(h: History, unit: str) -> str:
    nights = ", ".join(f"{code(n.label)}" + (f" ({md(n.date)})" if n.date and n.date != n.label else "") for n in h.nights)
    text = f"{num(len(h.nights))} nights, oldest first: {nights}."
    sizes = h.figures["models"].tolist()
    if any(s != len(h.common) for s in sizes):
        text += (f" **The catalog changed**: the nights hold {', '.join(num(s) for s in sizes)} models; every trend "
                 f"below is over the {num(len(h.common))} models present in every night.")
    else:
        text += f" Every night holds the same {num(len(h.common))} models."
    if not h.weighted:
        text += f" Not every night has download counts, so shares are of {unit}."
    return text


def _trend_text(unit: str) -> str:
    return (f"Over the models present in every night. *End-to-end coverage*: the share of their {unit} that pass, of "
            "those in a PyTorch format. *Device pass rate*: passing models over those the device passed or failed (as in each "
            "report's Summary). *Added* and *gone*: models since the night before.")


def _figures(h: History) -> str:
    headers = ["night", "date", "models", "added", "gone", "same models", "passing", "device verdicts",
               "device pass rate", "end-to-end coverage"]  # fmt: skip
    rows = [[code(r.night), md(r.date), num(r.models), num(r.added), num(r.gone), num(r.common), num(r.passing),
             num(r.tried), pct(r.pass_rate), pct(r.coverage)] for r in h.figures.itertuples(index=False)]  # fmt: skip
    return table(headers, rows, "llrrrrrrrr")


def _chart(charts: dict[str, str], role: str) -> str:
    path = charts.get(role)
    return f"![{role}]({path})" if path else ""


def _items_text(unit: str) -> str:
    what = "The downloads of failing models" if unit == "downloads" else "The failing models"
    return (f"{what} (among those present in every night) that each item of a night's lowering "
            "plan blocks: an op with its backward, or a graph the lowering tool fails on. Items from every night's "
            "plan, the newest night's first; a fixed item falls to 0.")


def _items(h: History, unit: str) -> str:
    if h.items.empty:
        return "_No lowering-plan items on any night._"
    show = compact if unit == "downloads" else num
    rows = [[r["label"], *[show(r[label]) for label in h.labels]] for _, r in h.items.iterrows()]
    return table(["item", *[code(label) for label in h.labels]], rows, "l" + "r" * len(h.labels))


def _changes_text() -> str:
    return ("Per night, the models whose outcome changed since the night before, as `sweep diff` finds them, with "
            "the reason now and why the check ran again: what changed in its fingerprint (a new device profile, "
            "library, settings or model), or *same check, new verdict* when nothing did.")


def _changes(h: History) -> list[str]:
    out: list[str] = []
    link = h.nights[-1].data.meta.source_name != "zoo" if h.nights else False
    for before, night, result in zip(h.nights, h.nights[1:], h.changes[1:]):
        assert result is not None
        counts = (f"regressed {num(len(result.regressed))} · fixed {num(len(result.fixed))} · still failing, other "
                  f"reason {num(len(result.changed))} · unavailable now {num(len(result.unavailable))} · new "
                  f"{num(len(result.new))} · gone {num(len(result.gone))}")
        out += [f"### {md(night.label)} (since {md(before.label)})", counts, *[f"> {w}" for w in result.warnings]]
        rows = change_rows(result, link=link)
        headers = ["change", "model", "before", "after", "reason now", "why"]
        out.append(long_table(headers, rows, "changed models", shown=CHANGE_ROWS))
    return out or ["_One night: nothing to compare yet._"]


def change_rows(result: DiffResult, *, link: bool) -> list[list[Any]]:
    """One row per model that regressed, was fixed, or fails for another reason."""
    rows = []
    for change, frame in (("regressed", result.regressed), ("fixed", result.fixed),
                          ("unavailable", result.unavailable), ("other reason", result.changed)):  # fmt: skip
        for r in frame.itertuples(index=False):
            why = getattr(r, "why", "") or ""
            rows.append([change, model_link(r.model_id_new, link=link), _outcome(r.status_old, r.reason_kind_old, r.reason_op_old),
                         _outcome(r.status_new, r.reason_kind_new, r.reason_op_new),
                         reason_cell(r.reason_kind_new, r.reason_op_new, r.reason_message_new),
                         "same check, new verdict" if why == SAME_CHECK else md(why or "—")])  # fmt: skip
    return rows


def _outcome(status: str, kind: object, op: object) -> str:
    reason = reason_cell(kind, op, "")
    return f"{status}: {reason}" if reason else str(status)


def _blockers(h: History) -> str:
    if h.blockers.empty:
        return "_No blockers on any night._"
    rows = [[md(r.blocker, 120), code(r.first), code(r.last), num(r.nights), num(r.models_now),
             "open" if r.open else f"gone after {md(r.last)}"] for r in h.blockers.itertuples(index=False)]  # fmt: skip
    text = ("Every blocker of a failing model (its kind and op; a whole-graph lowering-tool failure by its graph), "
            "the first and last night it blocked a model, and the models it blocks on the newest night.")
    return text + "\n\n" + long_table(["blocker", "first seen", "last seen", "nights", "models now", "state"], rows,
                                      "blockers")


def _flaky(h: History) -> list[str]:
    out = ["Models whose outcome changed from one night to the next under an unchanged check fingerprint: nothing in "
           "the check moved, its verdict did."]
    if h.flips.empty:
        out.append("_No verdict flipped under the same fingerprint._")
    else:
        rows = [[code(r.night), md(r.model_id), md(r.before), md(r.after), reason_cell(r.reason, r.op, "")]
                for r in h.flips.itertuples(index=False)]
        out.append(long_table(["night", "model", "before", "after", "reason now"], rows, "flips"))
    rates = flake_rates(h.rechecks, h.labels)
    if rates["rechecked"].sum() == 0:
        out.append("No night rechecked cached verdicts (`--recheck P` with `--cache` runs P% of them again).")
        return out
    out.append("Checks answered from the cache and run again (`--recheck`): the flake rate is the share whose "
               "verdict did not come back.")
    rows = [[code(r.night), num(r.rechecked), num(r.flaky), pct(r.rate)] for r in rates.itertuples(index=False)]
    out.append(table(["night", "rechecked", "not reproduced", "flake rate"], rows, "lrrr"))
    flaky = h.rechecks[~h.rechecks["reproduced"].astype(bool)] if not h.rechecks.empty else pd.DataFrame()
    if not flaky.empty:
        rows = [[code(r.night), md(r.model_id), md(r.before), md(r.after)] for r in flaky.itertuples(index=False)]
        out.append("Flaky: " + ", ".join(sorted({md(m) for m in flaky["model_id"]})) + ".")
        out.append(long_table(["night", "model", "cached verdict", "verdict now"], rows, "flaky checks"))
    return out
