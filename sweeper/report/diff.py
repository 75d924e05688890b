"""``sweep diff OLD NEW``: what was fixed, what regressed, what is new or gone.

A model regresses when it passed and now fails on the device, or when any stage that
passed now fails or is blocked. A passing model that is now gated, needs remote code or
is skipped became unavailable: listed, but not a device regression.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import pandas as pd

from sweeper.report import aggregate
from sweeper.report.escape import code, md, model_link, num, pct, table
from sweeper.report.load import SweepData
from sweeper.report.tables import long_table, reason_cell

BAD = ("fail", "blocked")
COLS = ["key", "model_id", "rank", "downloads", "status", "category", "reason_kind", "reason_op", "reason_message"]


@dataclass
class DiffResult:
    """Models per kind of change, per-stage counts, and the two sweeps' headlines."""

    fixed: pd.DataFrame
    regressed: pd.DataFrame
    unavailable: pd.DataFrame
    changed: pd.DataFrame
    new: pd.DataFrame
    gone: pd.DataFrame
    stages: pd.DataFrame
    headline: dict[str, tuple] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)
    link: bool = True  # model ids link to the Hub (not for zoo sweeps)
    labels: tuple[str, str] = ("", "")  # sweep id and start date of each side

    @property
    def regressed_any(self) -> bool:
        """Whether any model or stage regressed (what ``--fail-on-regression`` checks)."""
        return not self.regressed.empty


def compare(old: SweepData, new: SweepData) -> DiffResult:
    """Align two sweeps on model key and classify every change."""
    stages = [s for s in new.stages if s in old.stages]
    pick = COLS + [f"stage_{s}" for s in stages]
    both = old.models[pick].merge(new.models[pick], on="key", suffixes=("_old", "_new"), how="inner")
    both = both.sort_values(["rank_new", "key"], na_position="last", kind="stable")
    usable = ~both["category_new"].isin(["environment", "skip"])
    stage_rows, went_bad, went_good = [], pd.Series("", index=both.index), pd.Series("", index=both.index)
    for s in stages:
        o, n = both[f"stage_{s}_old"], both[f"stage_{s}_new"]
        bad = (o == "pass") & n.isin(BAD) & usable
        good = o.isin(BAD) & (n == "pass")
        went_bad = went_bad.where(~bad | (went_bad != ""), s)
        went_good = went_good.where(~good | (went_good != ""), s)
        stage_rows.append({"stage": s, "fixed": int(good.sum()), "regressed": int(bad.sum())})
    both["stage_bad"], both["stage_good"] = went_bad, went_good
    was_pass, now_pass = both["category_old"] == "pass", both["category_new"] == "pass"
    regressed = (was_pass & ~now_pass & usable) | (went_bad != "")
    same_reason = (both["reason_kind_old"].fillna("") == both["reason_kind_new"].fillna("")) & (
        both["reason_op_old"].fillna("") == both["reason_op_new"].fillna("")
    )
    changed = ~was_pass & ~now_pass & ~regressed & ~same_reason
    old_keys, new_keys = set(old.models["key"]), set(new.models["key"])
    return DiffResult(
        fixed=both[~was_pass & now_pass],
        regressed=both[regressed],
        unavailable=both[was_pass & ~usable],
        changed=both[changed],
        new=new.models[~new.models["key"].isin(old_keys)],
        gone=old.models[~old.models["key"].isin(new_keys)],
        stages=pd.DataFrame(stage_rows, columns=["stage", "fixed", "regressed"]),
        headline=_headline(old, new),
        warnings=_warnings(old, new),
        link=new.meta.source_name != "zoo",
        labels=(_label(old), _label(new)),
    )


def _label(data: SweepData) -> str:
    """``sweep ID, DATE`` from sweep.json, as far as it tells."""
    parts = [f"sweep {code(data.meta.sweep_id)}" if data.meta.sweep_id else ""]
    parts.append(md((data.meta.started or "")[:10]))
    return ", ".join(p for p in parts if p)


def _headline(old: SweepData, new: SweepData) -> dict[str, tuple]:
    o, n = aggregate.overview(old), aggregate.overview(new)
    oc, nc = aggregate.coverage(old), aggregate.coverage(new)
    out = {"models": (o["models"], n["models"]), "pass rate": (o["pass_rate"], n["pass_rate"])}
    if oc and nc:
        out["downloads covered"] = (oc["catalog_share"], nc["catalog_share"])
    return out


def _warnings(old: SweepData, new: SweepData) -> list[str]:
    """Differences in set-up that make the comparison less than like for like."""
    out = []
    for what, read in (("device", lambda m: m.device_spec), ("weights", lambda m: m.setting("weights")),
                       ("dtype", lambda m: m.setting("dtype"))):  # fmt: skip
        a, b = read(old.meta), read(new.meta)
        if a and b and a != b:
            out.append(f"The sweeps differ in {what}: {md(a)} → {md(b)}.")
    profiles = [(m.meta.profile or {}).get("hash") for m in (old, new)]
    if all(profiles) and profiles[0] != profiles[1]:
        out.append(f"The device profile changed: {md(profiles[0])} → {md(profiles[1])}.")
    return out


def _outcome(status: str, kind: object, op: object) -> str:
    """``fail: unsupported_op `aten::x``` or just the status."""
    reason = reason_cell(kind, op, "")
    return f"{status}: {reason}" if reason else status


def _rank(value: object) -> str:
    return num(None if pd.isna(value) else value)


def _model_rows(frame: pd.DataFrame, kind: str, link: bool) -> tuple[list[str], list[list]]:
    """Table headers and rows for one kind of change."""
    if kind in ("new", "gone"):
        rows = [
            [_rank(r.rank), model_link(r.model_id, link=link), r.status, reason_cell(r.reason_kind, r.reason_op, r.reason_message)]
            for r in frame.itertuples(index=False)
        ]
        return ["rank", "model", "status", "reason"], rows
    stage_col = "stage_good" if kind == "fixed" else "stage_bad"
    rows = [
        [
            _rank(r.rank_new),
            model_link(r.model_id_new, link=link),
            md(getattr(r, stage_col)),
            _outcome(r.status_old, r.reason_kind_old, r.reason_op_old),
            _outcome(r.status_new, r.reason_kind_new, r.reason_op_new),
            reason_cell(r.reason_kind_new, r.reason_op_new, r.reason_message_new),
        ]
        for r in frame.itertuples(index=False)
    ]
    return ["rank", "model", "stage", "before", "after", "reason now"], rows


def render_diff(result: DiffResult, *, old_name: str, new_name: str) -> str:
    """The diff as Markdown."""
    (old_label, new_label) = (f" ({label})" if label else "" for label in result.labels)
    parts = ["# Sweep diff", f"Old: {code(old_name)}{old_label} · new: {code(new_name)}{new_label}"]
    parts += [f"> {w}" for w in result.warnings]
    heads = [[k, _fmt(k, a), _fmt(k, b)] for k, (a, b) in result.headline.items()]
    parts.append(table(["", "old", "new"], heads, "lrr"))
    counts = [
        ["regressed", num(len(result.regressed))], ["fixed", num(len(result.fixed))],
        ["new", num(len(result.new))], ["gone", num(len(result.gone))],
        ["unavailable now (environment or skip)", num(len(result.unavailable))],
        ["still failing, other reason", num(len(result.changed))],
    ]  # fmt: skip
    parts.append(table(["change", "models"], counts, "lr"))
    if not result.stages.empty:
        srows = [[md(r.stage), num(r.fixed), num(r.regressed)] for r in result.stages.itertuples(index=False)]
        parts += ["## Per stage", table(["stage", "fixed", "regressed"], srows, "lrr")]
    for title, frame, kind in (
        ("Regressed", result.regressed, "regressed"),
        ("Fixed", result.fixed, "fixed"),
        ("Unavailable now", result.unavailable, "unavailable"),
        ("Still failing, other reason", result.changed, "changed"),
        ("New models", result.new, "new"),
        ("Gone models", result.gone, "gone"),
    ):
        headers, rows = _model_rows(frame, kind, result.link)
        parts += [f"## {title}", long_table(headers, rows, "models")]
    return "\n\n".join(parts) + "\n"


def _fmt(key: str, value: object) -> str:
    return num(value) if key == "models" else pct(value)  # type: ignore[arg-type]
