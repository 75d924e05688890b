"""report.md as a document: the header, the caveats, the headline sections (summary,
stages, failing models) and the order and headings of every section.

The tables under the headings are ``report.tables``'s; the long sections after the first
screen are ``report.budget``'s, each cut to its row budget with a link to its page. The
text depends only on the records and sweep.json (no clock, no paths of this machine), so
the same sweep always renders the same report.
"""

from __future__ import annotations

from typing import Any

from sweeper.report import budget, cause_tables, generation, lowering_plan, pages, quantization, tables
from sweeper.report.aggregate import STAGE_STATUSES
from sweeper.report.analysis import Analysis, checks_line
from sweeper.report.budget import ROWS
from sweeper.report.escape import code, md, num, pct, table
from sweeper.report.load import CATEGORIES
from sweeper.report.meta import CODE_ROWS, all_versions, device_name, identity_rows
from sweeper.storage.folder import META, RECORDS, REPROS

NOT_TESTED_INTRO = (
    "Environment outcomes (gated, remote code, unsupported library, download, missing dependency, config error) and "
    "skips: the device was never tried, so they are outside the device pass rate."
)
MAX_LINES = 300  # report.md's length past which sections that can say less do
CHART_TITLES = {
    "pass_rate_by_stage.png": "Pass rate by stage",
    "coverage_vs_rank.png": "Downloads covered vs rank",
    "top_blockers.png": "Fix next: downloads freed per step",
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


def headline(a: Analysis) -> str:
    """The headline: downloads covered (its denominator named), the device pass rate, and
    what a row stands for."""
    o, c = a.overview, a.coverage
    device = md(device_name(a.data.meta, a.data.models))
    lines = []
    if c is not None:
        everything = c["total_downloads"] + c["not_pytorch_downloads"]
        other = int(a.formats["models"].sum()) if not a.formats.empty else 0
        lead = f"**{pct(c['catalog_share'])} of the downloads of this catalog's PyTorch-format models run end to end on {device}**"
        if other:
            lead += (f" ({pct(c['passing_downloads'] / everything if everything else None)} of all its downloads: "
                     f"the {num(other)} repos in formats that are not PyTorch are left out of every share below)")
        lines.append(lead + "." + (f" {generation.END_TO_END.capitalize()}." if a.generation is not None else ""))
    lines.append(
        f"**Device pass rate: {pct(o['pass_rate'])}** ({num(o['passed'])} of the {num(o['tested'])} models the "
        f"device itself decided: those that pass and those a device-origin blocker stops, of the "
        f"{num(o['reached_device'])} that reached it; the lowering tool's, the harness's and the models' own failures "
        "are counted apart under Outcomes)."
    )
    stands = stands_for(a.builds)
    if stands:
        lines.append(stands)
    return "\n\n".join(lines)


def stands_for(builds: dict[str, Any]) -> str:
    """What a row stands for when configs were not the models' own (the Hub unreachable)."""
    n = builds.get("default_config_reached", 0)
    if not n:
        return ""
    return (
        f"**What a row stands for:** {num(n)} of the {num(builds['reached_device'])} models that reached the device "
        f"were built from their model type's default config (tiny widths, same ops), not their own: their results "
        f"are per architecture, and {num(builds['default_config_reached_builds'])} distinct builds stand for them "
        "(models of one build share one verdict; the page names a model's build)."
    )


def outcomes_section(a: Analysis) -> str:
    """Every model's outcome in one vocabulary, and the statuses its records carry."""
    o = a.overview
    share = (lambda n: pct(n / o["models"])) if o["models"] else (lambda n: pct(None))
    rows = [[CATEGORIES[k], num(n), share(n), OUTCOME_NOTES[k]] for k, n in o["categories"].items()]
    statuses = ", ".join(f"{k} {num(v)}" for k, v in o["status_counts"].items())
    return "\n\n".join([table(["outcome", "models", "share", "meaning"], rows, "lrrl"),
                         f"Record statuses of the {num(o['models'])} models: {statuses}."])


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
    if a.generation is not None:  # the stage only models that generate have: the rest read "not recorded"
        note += " Only models that generate have the generate stage: the others count as not recorded in its row."
    return note + "\n\n" + table(["stage", *statuses], rows, "l" + "r" * len(statuses))


def links_to_hub(a: Analysis) -> bool:
    """Model ids link to Hub pages unless the models came from the offline zoo."""
    return a.data.meta.source_name != "zoo"


FIX_NEXT_ROWS = 10  # steps of the plan on the first screen; the plan page has them all


def render(a: Analysis, *, charts: list[str]) -> str:
    """The whole report.md text: the answer first (header, headline, what to fix next), then
    the outcomes and each root cause's evidence in short tables, each linked to its page."""
    w, link = a.weighted, links_to_hub(a)
    parts = [header(a), *(f"> {n}" for n in notes(a))]
    parts += ["## Summary", headline(a), "## Fix next",
              lowering_plan.render(a.plan, shown=FIX_NEXT_ROWS, detail=pages.PLAN)]
    parts += ["## Outcomes", outcomes_section(a), "## Stages", stages_section(a)]
    tool = a.tool_causes if a.tool_causes is not None else cause_tables.cause_frame(a.data, None, ("tool",))
    gaps = a.gap_causes if a.gap_causes is not None else cause_tables.cause_frame(a.data, None, ("dtype", "feature"))
    parts += [
        "## Lowering-tool bugs by diagnostic",
        TOOL_INTRO.format(version=_tool_version(a)),
        cause_tables.tool_table(tool.head(ROWS), weighted=w, link=link, shown=ROWS),
        budget.more(len(tool), ROWS, "lowering-tool bugs, with every reproducer", pages.REPROS),
        "## Dtypes and features the device lacks",
        GAPS_INTRO,
        cause_tables.gap_table(a.data, gaps, weighted=w, link=link),
    ]
    if a.against is not None:
        parts += [a.against]
    parts += [
        "## Not device failures",
        NOT_TESTED_INTRO,
        tables.not_tested(a.not_tested, weighted=w, link=link),
    ]
    parts += budget.not_pytorch(a)  # a section only when the catalog has such repos
    quantized = quantization.render(quantization.table_of(a.data), weighted=w)
    if quantized:  # a section only when the sweep has quantized repos
        parts += ["## Quantization", quantized]
    parts += budget.ours(a, link=link)
    parts += budget.fallbacks_and_breaks(a, link=link)
    parts += budget.numerics_and_shapes(a, link=link)
    parts += budget.by_library(a)
    if charts:
        parts += ["## Charts", *(f"![{CHART_TITLES.get(c, c)}](charts/{c})" for c in charts)]
    parts += ["## More", pages.index_text(a)]
    return "\n\n".join(p for p in _with_generation(a, parts, link=link) if p) + "\n"


def _with_generation(a: Analysis, parts: list[str], *, link: bool) -> list[str]:
    """``parts`` with the Generation section before By library when a model generates: whole
    while report.md stays within ``MAX_LINES`` (the joined text counts 2 lines a part, and 3
    more with the section's heading), else a few summary lines."""
    if a.generation is None:
        return parts
    at, left = parts.index("## By library"), MAX_LINES - sum(p.count("\n") + 2 for p in parts if p) - 3
    return [*parts[:at], *generation.section(a.generation, link=link, page=pages.GENERATION, lines=left), *parts[at:]]


TOOL_INTRO = (
    "Failures of the lowering tool ({version}) on ops the device profile calls native: upstream bugs, not chip gaps. "
    "One row per bug, by the op and the normalised diagnostic (numbers and value names left out), so that two "
    "diagnostics of one op are two rows, each with the reproducer that fails with it (marked ⚠ when it does not)."
)
GAPS_INTRO = (
    "Device-origin blockers that are no op to lower, by what the device lacks: each dtype with the ops refused for "
    "it and the modules of the model code that produce it (as the compiled graph names them); lowering-tool failures "
    "on an op the same model refuses for its dtype count here, since lowering it would not make it run."
)


def _tool_version(a: Analysis) -> str:
    """The lowering tool as the records name it (``Torch-MLIR 20261001``)."""
    versions = all_versions(a.data.meta, a.data.models).get("torch-mlir")
    return f"Torch-MLIR {' / '.join(versions)}" if versions else "its version not recorded"
