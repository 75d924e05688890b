"""``sweep diff OLD NEW``: what was fixed, what regressed, what is new or gone.

A model regresses when it passed and now fails on the device, or when any stage that
passed now fails or is blocked. A passing model that is now gated, needs remote code or
is skipped became unavailable: listed, but not a device regression.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from sweeper.report import aggregate
from sweeper.report.escape import code, md, model_link, num, pct, table
from sweeper.report.load import SweepData
from sweeper.report.tables import long_table, reason_cell
from sweeper.storage.folder import SweepFolder

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
    # Models in both sweeps by why their outcome may differ (``why_rows``); empty when the
    # folders were not given or their records carry no fingerprints.
    why: pd.DataFrame = field(default_factory=lambda: pd.DataFrame(columns=["why", "models", "changed"]))

    @property
    def regressed_any(self) -> bool:
        """Whether any model or stage regressed (what ``--fail-on-regression`` checks)."""
        return not self.regressed.empty


def compare(old: SweepData, new: SweepData, *, folders: tuple[Path, Path] | None = None) -> DiffResult:
    """Align two sweeps on model key and classify every change; with the two sweep
    ``folders``, each change also says why (``why_rows``)."""
    stages = [s for s in new.stages if s in old.stages]
    added = [s for s in new.stages if s not in old.stages]  # a stage the old sweep did not run (generate)
    pick = COLS + [f"stage_{s}" for s in stages]
    both = old.models[pick].merge(new.models[pick + [f"stage_{s}" for s in added]], on="key",
                                  suffixes=("_old", "_new"), how="inner")
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
    for s in added:  # a model that passed every stage before and fails the new one regressed there
        bad = (both["category_old"] == "pass") & both[f"stage_{s}"].isin(BAD) & usable
        went_bad = went_bad.where(~bad | (went_bad != ""), f"{s} (new stage)")
        stage_rows.append({"stage": f"{s} (new stage)", "fixed": 0, "regressed": int(bad.sum())})
    both["stage_bad"], both["stage_good"] = went_bad, went_good
    was_pass, now_pass = both["category_old"] == "pass", both["category_new"] == "pass"
    regressed = (was_pass & ~now_pass & usable) | (went_bad != "")
    same_reason = (both["reason_kind_old"].fillna("") == both["reason_kind_new"].fillna("")) & (
        both["reason_op_old"].fillna("") == both["reason_op_new"].fillna("")
    )
    changed = ~was_pass & ~now_pass & ~regressed & ~same_reason
    both["why"], why = "", pd.DataFrame(columns=["why", "models", "changed"])
    if folders is not None:
        both["why"] = why_rows(both["key"], *folders)
        moved = (~same_reason | (both["category_old"] != both["category_new"])) & (both["why"] != "")
        why = (
            pd.DataFrame({"why": both["why"], "changed": moved})[both["why"] != ""].groupby("why", sort=False)
            .agg(models=("changed", "size"), changed=("changed", "sum")).reset_index()
            .sort_values("models", ascending=False, kind="stable")
        )  # fmt: skip
    old_keys, new_keys = set(old.models["key"]), set(new.models["key"])
    added = int((~new.models["key"].isin(old_keys)).sum())
    if added and not why.empty:
        why = pd.concat([pd.DataFrame([{"why": "new model", "models": added, "changed": added}]), why], ignore_index=True)
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
        why=why,
    )


# Which part of a check's fingerprint changed, in words (see ``Fingerprinter.parts``).
PART_WORDS = {
    "environment": "new torch, Python, sweeper or device profile",
    "library": "new version of the model's library",
    "settings": "new settings",
    "model": "new model config or head",
}
SAME_CHECK = "same check"


def why_rows(keys: pd.Series, old_dir: Path, new_dir: Path) -> list[str]:
    """Per key, why its outcome may differ between the sweeps: ``same check`` (a changed
    outcome is then a new verdict of the same check), the fingerprint parts that changed,
    or ``""`` when a record carries no fingerprint."""
    wanted = set(keys)
    old_fp, new_fp = _fingerprints(old_dir, wanted), _fingerprints(new_dir, wanted)
    out = []
    for key in keys:
        a, b = old_fp.get(key), new_fp.get(key)
        if a is None or b is None:
            out.append("")
        elif a[0] == b[0]:
            out.append(SAME_CHECK)
        else:
            changed = [words for part, words in PART_WORDS.items() if a[1].get(part) != b[1].get(part)]
            out.append("; ".join(changed) if a[1] and b[1] and changed else "new check")
    return out


def _fingerprints(folder: Path, keys: set[str]) -> dict[str, tuple[str, dict]]:
    """``key -> (fingerprint, parts)`` from a sweep folder's records (read as a stream)."""
    from sweeper.storage.store import iter_raw

    found: dict[str, tuple[str, dict]] = {}
    for raw in iter_raw(SweepFolder(folder).records):
        key = raw.get("key") or raw["model_id"]
        notes = raw.get("notes") if isinstance(raw.get("notes"), dict) else {}
        if key in keys and notes.get("fingerprint"):
            parts = notes.get("fingerprint_parts")
            found[key] = (str(notes["fingerprint"]), parts if isinstance(parts, dict) else {})
    return found


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
    headers = ["rank", "model", "stage", "before", "after", "reason now"]
    if "why" in frame.columns and frame["why"].astype(bool).any():
        for row, why in zip(rows, frame["why"], strict=True):
            row.append(md(why) if why != SAME_CHECK else "same check, new verdict")
        headers.append("why")
    return headers, rows


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
    if not result.why.empty:
        wrows = [
            [md(r.why) if r.why != SAME_CHECK else "nothing (the same check)", num(r.models), num(int(r.changed))]
            for r in result.why.itertuples(index=False)
        ]
        parts += ["## Why checks ran again", "Models by what changed in their check since the old sweep "
                  "(a changed outcome under the same check is a new verdict).",
                  table(["what changed", "models", "outcome changed"], wrows, "lrr")]  # fmt: skip
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
