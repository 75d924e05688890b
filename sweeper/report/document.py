"""report.md as a document: the header, the caveats, the headline sections (summary,
stages, failing models) and the order and headings of every section.

The tables under the headings are ``report.tables``'s. The text depends only on the
records and sweep.json (no clock, no paths of this machine), so the same sweep always
renders the same report.
"""

from __future__ import annotations

from typing import Any

from sweeper.report import formats, lowering_plan, shapes, tables
from sweeper.report.aggregate import STAGE_STATUSES
from sweeper.report.analysis import Analysis, checks_line
from sweeper.report.escape import code, details, md, num, pct, table
from sweeper.report.load import CATEGORIES
from sweeper.report.meta import CODE_ROWS, device_name, identity_rows
from sweeper.storage.folder import META, RECORDS, REPROS

NOT_TESTED_INTRO = (
    "Environment outcomes (gated, remote code, unsupported library, download, missing dependency, config error) and "
    "skips: the device was never tried, so they are outside the device pass rate."
)
ROADMAP_INTRO = (
    "Operators ranked by the {measure} of the failing models they block. *Only blocker of*: models "
    "that would pass if this op alone were lowered."
)
LOWERING_TOOL_INTRO = (
    "Ops the device profile calls native that the lowering tool failed on, and graphs it failed on without naming an "
    "op (one row per failing graph: its hash and failure signature): material for upstream bug reports, not chip "
    "gaps. Each record keeps the full diagnostic; reproducers are under `" + REPROS + "/` when the sweep wrote them."
)
HARNESS_INTRO = (
    "Failures that are sweeper's own (input rules, config shrink, host-side memory or time): our bug list, "
    "target 0. {count} model(s) have at least one."
)
GRAPH_BREAKS_INTRO = (
    "What broke compiled graphs, by cause, the one breaking the most models first. Compile runs as a user's "
    "`torch.compile` does: the op at a break runs eagerly on the device, and a model that compiles with breaks "
    "passes (*passing*); `--whole-graph` asks for one graph instead."
)
BREAKDOWN_INTRO = (
    "*Passing end to end*: models that pass every stage; the *end-to-end pass rate* divides them by the models "
    "tried, and *downloads passing* is their share of the group's downloads (formats that are not PyTorch left out, "
    "as in the Summary). The *device pass rate* counts device verdicts only (a pass, or a failure the device causes): "
    "a model the lowering tool, the harness or the model itself stops is outside it. The tables by model type and "
    "by task read the same."
)
CHART_TITLES = {
    "pass_rate_by_stage.png": "Pass rate by stage",
    "coverage_vs_rank.png": "Downloads covered vs rank",
    "top_blockers.png": "Top blockers",
}


def header(a: Analysis) -> str:
    """Title and the sweep's identity: what ran, where, on what, for how long."""
    models = a.data.models
    rows = [(label, code(v) if label in CODE_ROWS else md(v)) for label, v in identity_rows(a.data.meta, models)]
    counts = [("models", num(a.overview["models"])), ("configs", md(config_label(a.builds)))]
    if a.overview["distinct_checks"] < a.overview["models"]:  # models shared checks: say how many ran
        counts.append(("checks", md(checks_line(a.overview)) + _reused(a.overview)))
    rows[-1:-1] = counts  # before the wall time
    title = f"# Model sweep on {md(device_name(a.data.meta, models))}"
    return title + "\n\n" + table(["", ""], ([f"**{k}**", v] for k, v in rows))


def _reused(o: dict[str, Any]) -> str:
    """How many records copy another model's check (within the sweep or from the cache)."""
    copied = o["models"] - o["checks_run"]
    return f" ({num(o['checks_run'])} run, {num(copied)} reused)" if copied else ""


def config_label(builds: dict[str, Any]) -> str:
    """Where model configs came from, and the distinct builds when defaults stood in."""
    sources = ", ".join(f"{k} {v}" for k, v in builds["config_sources"].items() if k != "unknown") or "—"
    if not builds["default_config_models"]:
        return sources
    return (
        f"{sources}; {builds['default_config_models']} models were built from their type's default config, "
        f"{builds['default_config_builds']} distinct builds ({builds['distinct_builds']} distinct in all)"
    )


def notes(a: Analysis) -> list[str]:
    """Caveats a reader needs before trusting the figures."""
    meta, out = a.data.meta, []
    if not meta.found:
        out.append(f"No {META} was found: the header shows only what the records say.")
    elif not meta.ended:
        out.append(f"The sweep did not finish (no end time in {META}): models not yet tried are absent.")
    if a.data.skipped_lines:
        out.append(f"{num(a.data.skipped_lines)} unreadable line(s) of {RECORDS} were skipped.")
    if a.coverage is None:
        out.append("No model carries a download count, so download-weighted figures are omitted.")
    elif a.coverage["models_without_downloads"]:
        out.append(f"{num(a.coverage['models_without_downloads'])} model(s) without a download count weigh 0.")
    if not meta.setting("collect_all"):
        out.append(
            "Models stop at their first blocker (no `--collect-all`): a failing model may have more blockers "
            "than shown, so roadmap figures of what one op frees are upper bounds."
        )
    return out


OUTCOME_NOTES = {
    "pass": "every stage passed",
    "device": "the device refuses or gets it wrong (the CPU control passes, or the profile declares the gap)",
    "lowering_tool": "the lowering tool fails on ops the device supports",
    "harness": "sweeper's own inputs, shrink or host-side work: our bugs",
    "model": "fails on the CPU too, with the model's own configuration",
    "environment": "access, packaging, network, config: the device was never tried",
    "skip": "not tried",
    "nondeterministic": "the device's own two runs (same seed, same inputs) differ past the tolerance: not judged",
}


def summary_section(a: Analysis) -> str:
    """The headline: downloads covered, device pass rate, the outcome counts in one vocabulary."""
    o, c = a.overview, a.coverage
    device = device_name(a.data.meta, a.data.models)
    lines = []
    if c is not None:
        lines.append(
            f"**{pct(c['catalog_share'])} of this catalog's downloads run end to end on {md(device)}** "
            f"({pct(c['tested_share'])} of the downloads of models that pass or fail for the device's sake)."
        )
    lines.append(
        f"**Device pass rate: {pct(o['pass_rate'])}** ({num(o['passed'])} of {num(o['tested'])} models: those "
        f"that pass, and those a device-origin blocker stops; every other outcome is counted apart)."
    )
    share = (lambda n: pct(n / o["models"])) if o["models"] else (lambda n: pct(None))
    rows = [[CATEGORIES[k], num(n), share(n), OUTCOME_NOTES[k]] for k, n in o["categories"].items()]
    statuses = ", ".join(f"{k} {num(v)}" for k, v in o["status_counts"].items())
    return "\n\n".join([*lines, table(["outcome", "models", "share", "meaning"], rows, "lrrl"), f"Model statuses: {statuses}."])


def stages_section(a: Analysis) -> str:
    """Per-stage counts (and shares) among models that reached the device."""
    if a.stages.empty:
        return "_No stages recorded._"
    tested = a.overview["reached_device"]
    statuses = [*STAGE_STATUSES, "not recorded"]

    def cell(count: int) -> str:
        return f"{num(count)} ({pct(count / tested)})" if tested else num(count)

    rows = [[md(row["stage"]), *(cell(row[s]) for s in statuses)] for row in a.stages.to_dict(orient="records")]
    note = (
        f"Counts (and shares) of the {num(tested)} models that reached the device (whatever their outcome; each "
        "row adds up to them); crash, timeout and oom are apart from fail. A stage is blocked when an earlier one "
        "failed, and with `--collect-all` later stages still run after a failure."
    )
    return note + "\n\n" + table(["stage", *statuses], rows, "l" + "r" * len(statuses))


def links_to_hub(a: Analysis) -> bool:
    """Model ids link to Hub pages unless the models came from the offline zoo."""
    return a.data.meta.source_name != "zoo"


def render(a: Analysis, *, charts: list[str]) -> str:
    """The whole report.md text."""
    w = a.weighted
    link = links_to_hub(a)
    parts = [header(a)]
    parts += [f"> {n}" for n in notes(a)]
    parts += ["## Summary", summary_section(a), "## Stages", stages_section(a)]
    parts += [
        "## Not device failures",
        NOT_TESTED_INTRO,
        tables.not_tested(a.not_tested, weighted=w, link=link),
        "## Not PyTorch formats",
        formats.INTRO,
        formats.render(a.formats, weighted=w),
        "## Op-lowering roadmap",
        # Without download counts the ranking is by models blocked.
        ROADMAP_INTRO.format(measure="downloads" if w else "number"),
        tables.roadmap_ops(a.ops, weighted=w, link=link),
        *([line] if (line := shapes.roadmap_line(a.shapes)) else []),
        "### Models per op",
        "For the top ops, the models each one blocks and what else blocks them.",
        tables.op_models(a.op_models, weighted=w, link=link),
        "### Lowering plan",
        lowering_plan.render(a.plan),
        "## Feature gaps",
        "Device-origin blockers that are no op to lower (dynamic shapes, dtypes, sparse and nested tensors, forward AD, "
        "numerics), ranked like the ops.",
        tables.features(a.features, weighted=w, link=link),
        "## Top reasons",
        "The reason that decided each model the device fails (its record's outcome: a device blocker "
        "decides over any other).",
        tables.reasons(a.reasons, weighted=w, link=link),
        "## Lowering tool findings",
        LOWERING_TOOL_INTRO,
        tables.findings(a.lowering_tool, weighted=w, link=link, what="lowering tool findings"),
        "## Harness failures",
        HARNESS_INTRO.format(count=num(a.overview["harness_models"])),
        tables.findings(a.harness, weighted=w, link=link, what="harness failures"),
        "## Model failures",
        "Failures the CPU control repeats with the model's own (unshrunk) configuration: the model's, not the device's.",
        tables.findings(a.model, weighted=w, link=link, what="model failures"),
        "## CPU fallbacks",
        "Ops that ran on the host instead of the device (eager fallback), with the calls counted.",
        tables.per_item(a.fallbacks, "op", "op", weighted=w, link=link, as_code=True, what="CPU fallbacks"),
        "## Graph breaks",
        GRAPH_BREAKS_INTRO,
        tables.graph_breaks(a.breaks, weighted=w, link=link),
        "## Compile problems",
        tables.per_item(a.problems, "problem", "compile problem", weighted=w, link=link, as_code=False),
        "## Numerics",
        tables.numerics(a.numerics, weighted=w, link=link),
        "## Shapes",
        shapes.render(a.shapes, link=link),
        "## By library",
        "Every library's models: those the sweep drives, those it does not (their records say why), and the "
        "formats named apart; the roadmap, fallbacks and graph breaks above cover them all.",
        BREAKDOWN_INTRO,
        tables.breakdown(a.by_library, "library_name", weighted=w),
        "## By model type",
        tables.breakdown(a.by_model_type, "model_type", weighted=w),
        "## By task",
        tables.breakdown(a.by_task, "pipeline_tag", weighted=w),
    ]
    if charts:
        parts += ["## Charts", *(f"![{CHART_TITLES.get(c, c)}](charts/{c})" for c in charts)]
    parts += ["## Failing models", models_section(a, link=link)]
    return "\n\n".join(parts) + "\n"


def models_section(a: Analysis, *, link: bool) -> str:
    """The failing models by rank, at most ``MODEL_ROWS`` of them, collapsed; every model
    is in index.html (searchable) and records.parquet."""
    m = a.data.models
    failing = m[~m["category"].isin(["pass", "environment", "skip"])]  # device, lowering tool, harness, model
    pointer = (
        f"All {num(len(m))} models, searchable by id, model type or op: [index.html](index.html) "
        "(open it in a browser, or `sweep serve` this folder); every record: [records.parquet](records.parquet)."
    )
    if failing.empty:
        return f"_No model failed._ {pointer}"
    shown = failing.head(tables.MODEL_ROWS)
    body = tables.model_table(shown, a.data.stages, weighted=a.weighted, link=link)
    label = f"{num(len(shown))} failing models by rank"
    if len(failing) > len(shown):
        label = f"the first {num(len(shown))} of {num(len(failing))} failing models by rank"
    return pointer + "\n\n" + details(label, body)
