"""Pass rates, download-weighted coverage, breakdowns and reasons, from ``SweepData``.

Device rates count only models the device was really tried on: passing and failing ones.
Environment outcomes (gated, remote code, ...) and skips are counted apart.
Every table is sorted on explicit keys so that the same records give the same report.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

import pandas as pd

from sweeper.report import findings
from sweeper.report.load import CATEGORIES, OPTIONAL_CATEGORIES, TRIED, SweepData

# Outcomes that never reached the device: the breakdowns count them as not tried.
NOT_TRIED = ("environment", "skip")

EXAMPLES = 3
# The stage table's columns, in order: every stage status a model that reached the device
# can have, so each row adds up to that count (anything else recorded counts as ``fail``).
STAGE_STATUSES = ("pass", "fail", "crash", "timeout", "oom", "blocked", "skip")


def weight(models: pd.DataFrame) -> pd.Series:
    """Downloads per model, 0 where unknown."""
    return models["downloads"].fillna(0).astype("int64")


def ranked(models: pd.DataFrame) -> pd.DataFrame:
    """Models ordered most-downloaded first (rank, then key, breaking ties): the order
    examples are picked in."""
    order = models.assign(_w=weight(models))
    return order.sort_values(["_w", "rank", "key"], ascending=[False, True, True], na_position="last", kind="stable")


def overview(data: SweepData) -> dict[str, Any]:
    """Model counts in the one outcome vocabulary (``CATEGORIES``), by status, and the
    device pass rate: passing models over those that pass or fail for the device's sake."""
    m = data.models
    cats = m["category"].value_counts()
    counts = {name: int(cats.get(name, 0)) for name in CATEGORIES if name not in OPTIONAL_CATEGORIES or cats.get(name)}
    tested = counts["pass"] + counts["device"]
    return {
        "models": len(m),
        "tested": tested,
        "reached_device": int(reached_device(data).sum()),
        "passed": counts["pass"],
        "categories": counts,
        "pass_rate": counts["pass"] / tested if tested else None,
        "status_counts": {k: int(v) for k, v in sorted(m["status"].value_counts().items())},
        # Models sharing a fingerprint are one check (run once, or copied from a cache).
        "distinct_checks": int(m["fingerprint"].nunique()),
        "checks_run": int(m["reused_from"].isna().sum()),
    }


def in_catalog(models: pd.DataFrame) -> pd.Series:
    """Models inside every share of the catalog: all but those in a format that is not
    PyTorch (named apart, never tried: report/formats.py). The Summary, the lowering plan
    and the breakdowns divide by these alone, so their figures agree."""
    return models["reason_kind"] != "not_pytorch"


def coverage(data: SweepData) -> dict[str, Any] | None:
    """Share of downloads that run end to end; ``None`` when no model has downloads."""
    if not data.has_downloads:
        return None
    m = data.models
    w = weight(m)
    other_format = ~in_catalog(m)
    total = int(w[~other_format].sum())
    passing = int(w[m["category"] == "pass"].sum())
    tested = int(w[m["category"].isin(TRIED)].sum())
    return {
        "not_pytorch_downloads": int(w[other_format].sum()),
        "total_downloads": total,
        "passing_downloads": passing,
        "tested_downloads": tested,
        "catalog_share": passing / total if total else None,
        "tested_share": passing / tested if tested else None,
        "models_without_downloads": int(m["downloads"].isna().sum()),
    }


def reached_device(data: SweepData) -> pd.Series:
    """Models that reached the device: their move to it ran (whatever their outcome:
    lowering-tool, harness and model failures included), not blocked or skipped."""
    m = data.models
    column = data.stage_column("to_device")
    if column not in m.columns:  # a sweep that never moved models: the outcome says it
        return ~m["category"].isin(["environment", "skip"])
    return m[column].notna() & ~m[column].isin(["blocked", "skip"])


def stage_summary(data: SweepData) -> pd.DataFrame:
    """Per stage: counts of each stage status among the models that reached the device
    (``reached_device``), columns that add up to that count, and the pass share."""
    tested = reached_device(data).to_numpy()
    n = int(tested.sum())
    rows = []
    for stage in data.stages:
        seen = Counter(data.models[data.stage_column(stage)].to_numpy()[tested].tolist())
        counts = {s: seen.get(s, 0) for s in STAGE_STATUSES}
        counts["not recorded"] = seen.get(None, 0)
        # A stage status outside the four (a timeout or crash written per stage) did not pass.
        counts["fail"] += sum(v for k, v in seen.items() if k is not None and k not in counts)
        rows.append({"stage": stage, **counts, "pass_share": counts["pass"] / n if n else None})
    return pd.DataFrame(rows, columns=["stage", *STAGE_STATUSES, "not recorded", "pass_share"])


def breakdown(data: SweepData, column: str) -> pd.DataFrame:
    """Outcomes grouped by a model column (``library_name``, ``model_type``, ``pipeline_tag``),
    most downloaded groups first: models tried on the device (every outcome but environment and
    skip; a lowering tool's finding is a try), those that pass end to end and their share of
    the tried (``tried_pass_rate``) and of the group's downloads (``download_share``, over the
    downloads ``in_catalog`` as the Summary's), those never tried, and those with a device
    verdict (pass or device fail) with the device pass rate over them alone."""
    m = data.models.assign(
        _group=data.models[column].fillna("(none)").astype(str),
        _w=weight(data.models),
        _pass=data.models["category"] == "pass",
        _tested=data.models["category"].isin(TRIED),
        _tried=~data.models["category"].isin(NOT_TRIED),
    )
    m["_pass_w"] = m["_w"].where(m["_pass"], 0)
    m["_catalog_w"] = m["_w"].where(in_catalog(m), 0)
    g = m.groupby("_group", sort=True).agg(
        models=("key", "size"),
        tried=("_tried", "sum"),
        tested=("_tested", "sum"),
        passed=("_pass", "sum"),
        downloads=("_w", "sum"),
        catalog_downloads=("_catalog_w", "sum"),
        passing_downloads=("_pass_w", "sum"),
    )
    g["not_tried"] = g["models"] - g["tried"]
    g["tried_pass_rate"] = (g["passed"] / g["tried"]).where(g["tried"] > 0)
    g["device_pass_rate"] = (g["passed"] / g["tested"]).where(g["tested"] > 0)
    g["download_share"] = (g["passing_downloads"] / g["catalog_downloads"]).where(g["catalog_downloads"] > 0)
    g = g.reset_index().rename(columns={"_group": column})
    return g.sort_values(["downloads", "models", column], ascending=[False, False, True], kind="stable")


def grouped(models: pd.DataFrame, by: list[str]) -> pd.DataFrame:
    """Count, downloads and example model ids per group of ``by`` (missing values kept)."""
    if models.empty:
        return pd.DataFrame(columns=[*by, "models", "downloads", "examples"])
    r = ranked(models)
    g = r.groupby(by, dropna=False, sort=False)
    out = g.agg(models=("key", "size"), downloads=("_w", "sum"))
    out["examples"] = g["model_id"].agg(lambda ids: list(ids.iloc[:EXAMPLES]))
    out = out.reset_index()
    return out.sort_values(["downloads", "models", *by], ascending=[False, False] + [True] * len(by), kind="stable")


def top_reasons(data: SweepData, limit: int = 25, *, origin: str = "device") -> pd.DataFrame:
    """First reasons of the models counted under ``origin``, by (kind, op), with a sample message."""
    m = data.models[data.models["category"] == origin].fillna({"reason_kind": "unknown", "reason_op": ""})
    out = grouped(m, ["reason_kind", "reason_op"]).head(limit)
    first = ranked(m).drop_duplicates(["reason_kind", "reason_op"]).set_index(["reason_kind", "reason_op"])
    out["message"] = [first.loc[(k, o), "reason_message"] for k, o in zip(out["reason_kind"], out["reason_op"])]
    return out


def blockers_of(data: SweepData, origin: str, limit: int = 25) -> pd.DataFrame:
    """Every blocker of one origin (not only first reasons), by what it is about (kind, op,
    and for a lowering-tool failure naming no op the graph or failure signature, see
    ``findings``): models, downloads, a sample message, its reproducer and examples. The
    lowering-tool findings and the harness's own bug list are read this way."""
    by = ["kind", "op", "graph", "signature"]
    cols = [*by, "models", "downloads", "message", "repro", "examples"]
    b = _origin_blockers(data, origin).fillna({"op": ""})
    if b.empty:
        return pd.DataFrame(columns=cols)
    b = findings.annotate(b)
    pairs = b.drop_duplicates(["row", *by])[["row", *by, "message", "repro"]]
    pairs = pairs.join(data.models[["key", "model_id", "downloads", "rank"]], on="row")
    out = grouped(pairs, by).head(limit)
    # The sample and its reproducer: the first blocker of the group, preferring one that
    # names a reproducer.
    named = pairs.sort_values("repro", key=lambda r: r.eq(""), kind="stable")
    first = named.drop_duplicates(by).set_index(by)
    keys = list(zip(*(out[c] for c in by)))
    out["message"] = [first.loc[k, "message"] for k in keys]
    out["repro"] = [first.loc[k, "repro"] for k in keys]
    return out[cols]


def models_with(data: SweepData, origin: str) -> int:
    """How many models that were tried have at least one blocker of ``origin``."""
    return int(_origin_blockers(data, origin)["row"].nunique())


def _origin_blockers(data: SweepData, origin: str) -> pd.DataFrame:
    """Blockers of one origin, of models that were tried (not skipped, not the environment's)."""
    b = data.blockers
    tried = (~data.models["category"].isin(["pass", "skip", "environment"])).to_numpy()
    return b[(b["origin"] == origin).to_numpy() & tried[b["row"].to_numpy()]]


def not_tested(data: SweepData) -> pd.DataFrame:
    """Environment outcomes and skips by kind: outside the device pass rate."""
    m = data.models[data.models["category"].isin(["environment", "skip"])]
    return grouped(m.fillna({"reason_kind": "unknown"}), ["category", "reason_kind"])


def fallback_table(data: SweepData) -> pd.DataFrame:
    """Ops that ran on the host: models, their downloads, total calls."""
    return _per_item(data, data.fallbacks, "op", extra={"calls": ("calls", "sum")})


def graph_break_table(data: SweepData) -> pd.DataFrame:
    """What breaks compiled graphs, by cause (``classify.graph_break_cause``): the models it
    breaks, how many of them pass all the same, their downloads and examples; the cause
    breaking the most models first."""
    out = _per_item(data, data.breaks, "reason")
    if out.empty:
        return out.assign(passing=pd.Series(dtype="int64"))
    passed = (data.models["category"] == "pass").to_numpy()
    per_cause = data.breaks.drop_duplicates(["row", "reason"]).assign(_pass=lambda b: passed[b["row"].to_numpy()])
    out["passing"] = out["reason"].map(per_cause.groupby("reason")["_pass"].sum()).fillna(0).astype("int64")
    return out.sort_values(["models", "downloads", "reason"], ascending=[False, False, True], kind="stable")


def compile_problem_table(data: SweepData) -> pd.DataFrame:
    """Compiler findings that did not stop compilation."""
    return _per_item(data, data.problems, "problem")


def _per_item(data: SweepData, long: pd.DataFrame, item: str, extra: dict | None = None) -> pd.DataFrame:
    """Aggregate a long (key, item, ...) table by item, joined to model downloads."""
    cols = [item, "models", "downloads", *(extra or {}), "examples"]
    if long.empty:
        return pd.DataFrame(columns=cols)
    if extra:
        per_model = long.groupby(["row", item], sort=False).agg(**extra).reset_index()
    else:
        per_model = long.drop_duplicates(["row", item])[["row", item]]
    joined = per_model.join(data.models[["key", "model_id", "downloads", "rank"]], on="row")
    out = grouped(joined, [item])
    if extra:
        sums = joined.groupby(item).agg(**extra)
        out = out.join(sums, on=item)
    return out[cols]


def builds(data: SweepData) -> dict[str, Any]:
    """Where configs came from, and how many distinct builds the models are (see
    ``load.build_keys``): a finding about one model of a build is a finding about all."""
    m = data.models
    sources = m["config_source"].fillna("unknown").astype(str)
    default = sources.str.startswith("default")
    reached = reached_device(data)
    return {
        "config_sources": {k: int(v) for k, v in sorted(sources.value_counts().items())},
        "default_config_models": int(default.sum()),
        "reached_device": int(reached.sum()),
        "default_config_reached": int((default & reached).sum()),
        "default_config_reached_builds": int(m["build"][default & reached].nunique()),
        "distinct_builds": int(m["build"].nunique()),
        "default_config_builds": int(m["build"][default].nunique()),
    }
