"""One sweep against another of the same catalog in another dtype (``sweep report OUT
--against OTHER``): the models whose outcome differs, with both reasons, and the root causes
each dtype adds to the plan."""

from __future__ import annotations

import pandas as pd

from sweeper.report.escape import code, md, model_link, num, table
from sweeper.report.load import CATEGORIES, SweepData
from sweeper.report.root_causes import cause_models
from sweeper.report.tables import reason_cell

SHOWN = 25


def _dtype(data: SweepData) -> str:
    values = sorted(data.models["dtype"].dropna().astype(str).unique())
    return data.meta.setting("dtype") or (values[0] if len(values) == 1 else "the other sweep")


def render(data: SweepData, other: SweepData, *, link: bool) -> str:
    """The section (its heading too): this sweep (``data``) against ``other``."""
    mine, theirs = _dtype(data), _dtype(other)
    m, o = data.models.set_index("key"), other.models.set_index("key")
    common = m.index.intersection(o.index)
    changed = [k for k in common if m.at[k, "category"] != o.at[k, "category"]]
    lines = [f"## Against {md(theirs)}", f"This {code(mine)} sweep against the {code(theirs)} sweep of the same catalog: {num(len(common))} models "
             f"in both, {num(len(changed))} with another outcome."]
    if changed:
        rows = []
        for key in sorted(changed, key=lambda k: (m.at[k, "rank"] if pd.notna(m.at[k, "rank"]) else 1e12, k))[:SHOWN]:
            rows.append([model_link(str(m.at[key, "model_id"]), link=link),
                         _outcome(o.loc[key]), _outcome(m.loc[key])])
        lines.append(table(["model", theirs, mine], rows, "lll"))
    only_mine, only_theirs = _causes(data, other)
    lines.append(f"Root causes only in {code(mine)}: {_list(only_mine)}.")
    lines.append(f"Root causes only in {code(theirs)}: {_list(only_theirs)}.")
    return "\n\n".join(lines)


def _outcome(row: pd.Series) -> str:
    text = md(CATEGORIES.get(row["category"], row["category"]))
    reason = reason_cell(row["reason_kind"], row["reason_op"], row["reason_message"])
    return f"{text}: {reason}" if reason and row["category"] != "pass" else text


def _causes(data: SweepData, other: SweepData) -> tuple[list[tuple[str, int]], list[tuple[str, int]]]:
    """Causes (with the models they block) that block models in one sweep and none in the other."""
    mine = {c.label(): len(rows) for c, rows in cause_models(data).items()}
    theirs = {c.label(): len(rows) for c, rows in cause_models(other).items()}
    return ([(k, v) for k, v in sorted(mine.items()) if k not in theirs],
            [(k, v) for k, v in sorted(theirs.items()) if k not in mine])


def _list(items: list[tuple[str, int]]) -> str:
    if not items:
        return "none"
    return "; ".join(f"{label} ({num(n)} models)" for label, n in items)
