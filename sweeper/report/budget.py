"""report.md's row budget: each long section keeps its summary and its first ``ROWS`` rows,
and a line links to the details page that has every row.

A large sweep meets hundreds of ops, graph-break causes, libraries and formats. Cut to a
budget, report.md keeps the same length whatever the sweep meets (``document.MAX_LINES``
with room for the Generation section's short form), and a reader still sees each section's
figures and its largest rows. The figures are the same on both sides: only where a row is
shown moves.
"""

from __future__ import annotations

from sweeper.report import formats, generation, numerics, pages, shapes, tables
from sweeper.report.analysis import Analysis
from sweeper.report.escape import num

ROWS = 5  # rows of each long table in report.md; its details page has them all

HARNESS_INTRO = (
    "Failures that are sweeper's own (input rules, config shrink, host-side memory or time): our bug list, "
    "target 0. {count} model(s) have at least one; for {deciding} of them it decides the outcome (the *harness* row "
    "of Outcomes), for the rest a device blocker decides it."
)
MODEL_INTRO = (
    "Failures the CPU control repeats with the model's own (unshrunk) configuration: the model's, not the device's."
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


def more(total: int, shown: int, what: str, page: str) -> str:
    """``All 23 lowering-tool bugs: [details/x.md](details/x.md).`` when a table was cut."""
    return f"All {num(total)} {what}: [{page}]({page})." if total > shown else ""


def not_pytorch(a: Analysis) -> list[str]:
    """Formats that are not PyTorch, only when the catalog has such repos."""
    if a.formats.empty:
        return []
    return ["## Not PyTorch formats", formats.INTRO, formats.render(a.formats.head(ROWS), weighted=a.weighted),
            more(len(a.formats), ROWS, "formats that are not PyTorch", pages.FORMATS)]


def ours(a: Analysis, *, link: bool) -> list[str]:
    """Harness and model failures, only when a model has one (each figure with its meaning)."""
    out, w = [], a.weighted
    if a.overview["harness_models"]:
        out += ["## Harness failures", HARNESS_INTRO.format(count=num(a.overview["harness_models"]),
                                                            deciding=num(a.overview["categories"].get("harness", 0))),
                tables.findings(a.harness.head(ROWS), weighted=w, link=link, what="harness failures"),
                more(len(a.harness), ROWS, "harness failures", pages.MODELS)]
    if not a.model.empty:
        out += ["## Model failures", MODEL_INTRO,
                tables.findings(a.model.head(ROWS), weighted=w, link=link, what="model failures"),
                more(len(a.model), ROWS, "model failures", pages.MODELS)]
    return out


def fallbacks_and_breaks(a: Analysis, *, link: bool) -> list[str]:
    """The ops that ran on the host, and what broke compiled graphs."""
    w = a.weighted
    return [
        "## CPU fallbacks",
        "Ops that ran on the host instead of the device (eager fallback), with the calls counted.",
        tables.per_item(a.fallbacks.head(ROWS), "op", "op", weighted=w, link=link, as_code=True, what="CPU fallbacks"),
        more(len(a.fallbacks), ROWS, "CPU fallbacks", pages.DETAIL),
        "## Graph breaks",
        GRAPH_BREAKS_INTRO,
        tables.graph_breaks(a.breaks.head(ROWS), weighted=w, link=link),
        more(len(a.breaks), ROWS, "graph-break causes", pages.DETAIL),
    ]


def numerics_and_shapes(a: Analysis, *, link: bool) -> list[str]:
    """How far the device's results are from the CPU's, and what lengths that vary cost."""
    n = a.numerics
    ranked, random = n["ranked"], n["nondeterministic"]
    whole = f"The {num(len(ranked))} largest differences" + (
        f" and all {num(len(random))} nondeterministic models" if len(random) else "")
    cut = len(ranked) > ROWS or len(random) > ROWS
    return [
        "## Numerics",
        numerics.render(n, weighted=a.weighted, link=link, rows=ROWS),
        f"{whole}: [{pages.NUMERICS}]({pages.NUMERICS})." if cut else "",
        "## Shapes",
        shapes.render(a.shapes, link=link, rows=ROWS, page=pages.SHAPES),
    ]


def by_library(a: Analysis) -> list[str]:
    """Outcomes of the most downloaded libraries (by model type and by task: their pages)."""
    intro = BREAKDOWN_INTRO
    if a.generation is not None:
        intro = intro.replace("every stage;", f"every stage ({generation.END_TO_END});")
    return ["## By library", intro, tables.breakdown(a.by_library.head(ROWS), "library_name", weighted=a.weighted),
            more(len(a.by_library), ROWS, "libraries", pages.LIBRARIES)]
