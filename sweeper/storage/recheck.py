"""``--recheck P``: run a seeded P% of the checks the cache would answer, and say whether
each verdict came back.

A check answered from ``--cache`` is never run again while its fingerprint holds, so a
verdict that flips from run to run (an unstable kernel, a race in a backward, a timeout at
the edge) would be reused forever. With ``--recheck P`` a sweep runs P% of the cache hits
anyway, chosen by a hash of the sweep's seed, the day and the fingerprint (the same
checks on a resumed night; other checks the next night), and notes on the new record
(``notes.recheck``) the verdict the cache held, the one it got now, and whether they are
the same. ``sweep history`` names the checks whose verdict did not come back and the
share of them (the flake rate).
"""

from __future__ import annotations

import datetime as dt
import random
from typing import Any

from sweeper.records import ModelRecord

NOTE = "recheck"


def chosen(fingerprint: str, *, percent: float, seed: int, day: str | None = None) -> bool:
    """Whether the check of ``fingerprint`` is rechecked in a sweep with ``percent`` and ``seed``."""
    if percent <= 0:
        return False
    if percent >= 100:
        return True
    day = day or dt.datetime.now(dt.timezone.utc).date().isoformat()
    return random.Random(f"{seed}:{day}:{fingerprint}").random() * 100 < percent


def verdict(record: ModelRecord) -> str:
    """A record's verdict in one line: its outcome and the deciding reason's kind and op."""
    outcome = (record.outcome or record.settle().outcome).value  # type: ignore[union-attr]
    reason = record.reason
    if reason is None or outcome == "pass":
        return outcome
    return f"{outcome}: {reason.kind.value}" + (f" {reason.op}" if reason.op else "")


def note(cached: ModelRecord, now: ModelRecord) -> dict[str, Any]:
    """What a rechecked record keeps: the cached and the new verdict, and whether they agree."""
    before, after = verdict(cached), verdict(now)
    found: dict[str, Any] = {"reproduced": before == after, "cached": before, "now": after}
    sweep = cached.notes.get("cached_from_sweep") or cached.sweep_id
    if sweep:
        found["cached_from_sweep"] = sweep
    return found
