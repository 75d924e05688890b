"""Flaky verdicts: the checks ``--recheck`` ran again, and whether each verdict came back.

With ``--cache``, a sweep answers a check it ran before from the cache; ``--recheck P``
runs a seeded P% of those again and notes on the record (``notes.recheck``) the verdict
the cache held and whether the new run reproduced it. A check whose verdict did not come
back under the same fingerprint is flaky: nothing in it changed, its outcome did.
"""

from __future__ import annotations

from typing import Any

import pandas as pd

from sweeper.report.history_runs import Night
from sweeper.storage.folder import SweepFolder
from sweeper.storage.store import iter_raw

COLUMNS = ["night", "model_id", "reproduced", "before", "after"]


def rechecks_of(night: Night) -> list[dict[str, Any]]:
    """The rechecked records of one night: model, whether the verdict reproduced, the
    cached verdict and the new one (the last record of a key wins, as everywhere)."""
    found: dict[str, dict[str, Any]] = {}
    for raw in iter_raw(SweepFolder(night.path).records):
        notes = raw.get("notes") if isinstance(raw.get("notes"), dict) else {}
        recheck = notes.get("recheck")
        key = raw.get("key") or raw["model_id"]
        if not isinstance(recheck, dict):
            found.pop(key, None)
            continue
        found[key] = {"night": night.label, "model_id": raw["model_id"], "reproduced": recheck.get("reproduced") is True,
                      "before": str(recheck.get("cached", "")), "after": str(recheck.get("now", ""))}
    return list(found.values())


def recheck_table(nights: list[Night]) -> pd.DataFrame:
    """Every recheck of every night (``COLUMNS``)."""
    rows = [row for night in nights for row in rechecks_of(night)]
    return pd.DataFrame(rows, columns=COLUMNS)


def flake_rates(rechecks: pd.DataFrame, labels: list[str]) -> pd.DataFrame:
    """Per night: checks rechecked, verdicts not reproduced and their share (the flake rate)."""
    rows = []
    for label in labels:
        mine = rechecks[rechecks["night"] == label] if not rechecks.empty else rechecks
        n, flaky = len(mine), int((~mine["reproduced"].astype(bool)).sum()) if len(mine) else 0
        rows.append({"night": label, "rechecked": n, "flaky": flaky, "rate": flaky / n if n else None})
    return pd.DataFrame(rows, columns=["night", "rechecked", "flaky", "rate"])
