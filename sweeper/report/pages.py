"""The report's detail pages: what report.md keeps short, whole, one click away.

report.md answers "what do we fix next?" on its first screen and keeps every other table
to its row budget (``report.budget``); the full tables live beside it in ``details/`` (the
plan with each step's models, every lowering-tool bug with every reproducer, ops by
downloads blocked, compile problems with their full messages, fallbacks and breaks,
numerics, shapes, the breakdowns by model type, task and library, every failing model with
the models that share its build and every harness and model failure, the formats that are
not PyTorch). Links from a page to the sweep folder go up one level.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pandas as pd

from sweeper.report import cause_tables, formats, generation, lowering_plan, numerics, shapes, tables
from sweeper.report.analysis import Analysis
from sweeper.report.escape import compact, md, model_link, num, table
from sweeper.report.root_causes import cause_models
from sweeper.storage.folder import DETAILS

PLAN = f"{DETAILS}/plan.md"
REPROS = f"{DETAILS}/lowering-tool.md"
OPS = f"{DETAILS}/ops.md"
DETAIL = f"{DETAILS}/fallbacks-and-breaks.md"
NUMERICS = f"{DETAILS}/numerics.md"
SHAPES = f"{DETAILS}/shapes.md"  # only when the sweep ran the shapes stage
PROBLEMS = f"{DETAILS}/compile-problems.md"
TYPES = f"{DETAILS}/model-types.md"
TASKS = f"{DETAILS}/tasks.md"
LIBRARIES = f"{DETAILS}/libraries.md"
MODELS = f"{DETAILS}/failing-models.md"
FORMATS = f"{DETAILS}/formats.md"  # only when the catalog has repos in formats that are not PyTorch
GENERATION = f"{DETAILS}/generation.md"  # only when a model generates
UP = "../"  # a page's links into the sweep folder (reproducers, the page)

INDEX = [
    (PLAN, "Fix next, every step", "the whole plan, and the models each cause blocks"),
    (REPROS, "Lowering-tool bugs and reproducers", "every bug by diagnostic, every reproducer with its command"),
    (OPS, "Ops by downloads blocked", "each op's blocked models and what else blocks them (not the fix order)"),
    (PROBLEMS, "Compile problems", "every compile problem with its full message"),
    (DETAIL, "CPU fallbacks and graph breaks", "all of them"),
    (NUMERICS, "Numerics", "the largest differences from the CPU's and every nondeterministic model"),
    (SHAPES, "Shapes", "every failure at a shape and every model whose padding differs"),
    (TYPES, "By model type", "outcomes per model type"),
    (TASKS, "By task", "outcomes per task"),
    (LIBRARIES, "By library", "outcomes per library"),
    (MODELS, "Failing models", "every failing model by rank, with the models that share its build, and every harness "
                               "and model failure"),
    (FORMATS, "Not PyTorch formats", "every format, with its repos' downloads"),
    (GENERATION, "Generation", "every model that generates, with each mode's verdict"),
]


def index_text(a: Analysis) -> str:
    """report.md's list of the detail pages, and the page with every model."""
    lines = [f"- [{title}]({path}): {what}." for path, title, what in INDEX if path in _written(a)]
    lines.append(f"- [index.html](index.html): all {num(len(a.data.models))} models, searchable by id, model type or op "
                 "(open it in a browser, or `sweep serve` this folder); every record: [records.parquet](records.parquet).")
    return "\n".join(lines)


def _written(a: Analysis) -> set[str]:
    """The pages this sweep has: some only when it has what they list."""
    return {PLAN, REPROS, OPS, PROBLEMS, DETAIL, NUMERICS, TYPES, TASKS, LIBRARIES, MODELS,
            *([SHAPES] if a.shapes is not None else []), *([FORMATS] if not a.formats.empty else []),
            *([GENERATION] if a.generation is not None else [])}


def write_pages(a: Analysis, folder: Path, *, link: bool) -> list[str]:
    """Write every detail page into ``folder`` (the staged ``details/``); their names."""
    writers: dict[str, Callable[[Analysis, bool], str]] = {
        PLAN: plan_page, REPROS: tool_page, OPS: ops_page, PROBLEMS: problems_page, DETAIL: detail_page,
        NUMERICS: lambda a, link: _page("Numerics", numerics.render(a.numerics, weighted=a.weighted, link=link)),
        SHAPES: lambda a, link: _page("Shapes", shapes.render(a.shapes, link=link)),
        TYPES: lambda a, link: _breakdown_page(a, "By model type", a.by_model_type, "model_type"),
        TASKS: lambda a, link: _breakdown_page(a, "By task", a.by_task, "pipeline_tag"),
        LIBRARIES: lambda a, link: _breakdown_page(a, "By library", a.by_library, "library_name"),
        MODELS: models_page, FORMATS: lambda a, link: _page(
            "Not PyTorch formats", formats.INTRO, formats.render(a.formats, weighted=a.weighted)),
        GENERATION: generation_page,
    }
    written = [path for path in writers if path in _written(a)]
    folder.mkdir(parents=True, exist_ok=True)
    for path in written:
        (folder / Path(path).name).write_text(writers[path](a, link), encoding="utf-8")
    return written


def _page(title: str, *parts: str) -> str:
    return "\n\n".join([f"# {title}", f"Part of [the report]({UP}report.md).", *[p for p in parts if p]]) + "\n"


def plan_page(a: Analysis, link: bool) -> str:
    """Every step of the plan, then each cause's failing models (most downloaded first)."""
    rows = a.data.models
    order = rows.assign(_w=rows["downloads"].fillna(0)).sort_values(["_w", "rank"], ascending=[False, True]).index
    blocked = cause_models(a.data)
    sections = []
    for step in a.plan["steps"]:
        for cause in step["causes"]:
            found = [r for r in order if r in blocked.get(cause, set())]
            models = ", ".join(model_link(rows.at[r, "model_id"], link=link) for r in found[:30])
            more = f" and {num(len(found) - 30)} more" if len(found) > 30 else ""
            sections.append(f"**{step['step']}. {cause.label()}** ({cause.whose}; blocks {num(len(found))} failing "
                            f"models): {models}{more}.")
    body = lowering_plan.render(a.plan, shown=len(a.plan["steps"]) or 1).replace("](repros/", f"]({UP}repros/")
    return _page("Fix next: the whole plan", body, "## The models each cause blocks", "\n\n".join(sections))


def tool_page(a: Analysis, link: bool) -> str:
    """Every lowering-tool bug by diagnostic, and every reproducer in the folder."""
    frame = a.tool_causes if a.tool_causes is not None else cause_tables.cause_frame(a.data, a.folder, ("tool",))
    return _page(
        "Lowering-tool bugs and reproducers",
        "Each bug is an op and the normalised diagnostic the lowering tool fails with. Each reproducer is a "
        "standalone script: `python repros/NAME.py` exits 1 and prints the diagnostic while the bug stands, 0 once it "
        "lowers; `sweep check-repros FOLDER` runs them all and marks each here.",
        "## Bugs",
        cause_tables.tool_table(frame, weighted=a.weighted, link=link, shown=max(len(frame), 1), prefix=UP),
        "## Reproducers",
        cause_tables.repro_index(a.data, a.folder, frame, prefix=UP),
    )


def ops_page(a: Analysis, link: bool) -> str:
    """Ops ranked by the downloads of the models they block, with each op's models."""
    return _page(
        "Ops by downloads blocked",
        "The device's ops ranked by the downloads of the failing models they block: how much each op touches, not "
        "the fix order (a model blocked by two ops is freed only by both: the plan orders the fixes).",
        tables.roadmap_ops(a.ops, weighted=a.weighted, link=link),
        "## Models per op",
        tables.op_models(a.op_models, weighted=a.weighted, link=link),
        "## Every device blocker that is no op",
        tables.features(a.features, weighted=a.weighted, link=link),
        "## The reason that decided each failing model",
        tables.reasons(a.reasons, weighted=a.weighted, link=link),
    )


def problems_page(a: Analysis, link: bool) -> str:
    """Compile problems with their full messages."""
    frame = a.problems
    headers = ["problem", "models", "downloads", "examples"]
    rows = [[md(r.problem), num(r.models), compact(r.downloads), tables.examples(r.examples, link)]
            for r in frame.itertuples(index=False)]
    keep = headers if a.weighted else [h for h in headers if h != "downloads"]
    rows = [[c for c, h in zip(r, headers) if h in keep] for r in rows]
    return _page("Compile problems", "What the compile stage noted, whole, one row per distinct message.",
                 table(keep, rows, tables.align_for(keep)) if rows else "_No compile problems._")


def detail_page(a: Analysis, link: bool) -> str:
    """All CPU fallbacks and graph-break causes."""
    w = a.weighted
    return _page("CPU fallbacks and graph breaks", "## CPU fallbacks",
                 tables.per_item(a.fallbacks, "op", "op", weighted=w, link=link, as_code=True, what="CPU fallbacks"),
                 "## Graph breaks", tables.graph_breaks(a.breaks, weighted=w, link=link))


def _breakdown_page(a: Analysis, title: str, frame: pd.DataFrame, column: str) -> str:
    return _page(title, tables.breakdown(frame, column, weighted=a.weighted).replace("<details>", "").replace(
        "</details>", ""))


def generation_page(a: Analysis, link: bool) -> str:
    """Every model that generates: each mode's verdict, its cache, compiles per step."""
    assert a.generation is not None
    return _page("Generation", *generation.details_page(a.generation, link=link))


def models_page(a: Analysis, link: bool) -> str:
    """Every failing model by rank, and the models that share its build (one verdict)."""
    m = a.data.models
    failing = m[~m["category"].isin(["pass", "environment", "skip"])]
    if failing.empty:
        return _page("Failing models", "_No model failed._")
    body = tables.model_table(failing, a.data.stages, weighted=a.weighted, link=link)
    shared = _same_build(m, failing)
    ours = _ours(a, link)  # first: the table of every failing model can be 100,000 rows long
    return _page("Failing models", *ours, "## Every failing model, by rank" if ours else "", body,
                 "## Models that share a failing model's build",
                 "Models built from one default config are one build: one check stands for all of them.", shared)


def _ours(a: Analysis, link: bool) -> list[str]:
    """Every harness and model failure (report.md keeps its row budget of them)."""
    out = []
    for title, frame in (("Harness failures", a.harness), ("Model failures", a.model)):
        if not frame.empty:
            text = tables.findings(frame, weighted=a.weighted, link=link, what=title.lower(), shown=len(frame))
            out += [f"## {title}", text.replace("](repros/", f"]({UP}repros/")]  # reproducers are up one level
    return out


def _same_build(m: pd.DataFrame, failing: pd.DataFrame) -> str:
    """One line per build of a failing model that other models share."""
    members = m.groupby("build")["model_id"].agg(list)
    lines = []
    for _build, ids in members.items():
        failing_ids = [i for i in ids if i in set(failing["model_id"])]
        if len(ids) > 1 and failing_ids:
            lines.append(f"- {md(', '.join(ids[:12]))}" + (f" and {num(len(ids) - 12)} more" if len(ids) > 12 else ""))
    return "\n".join(lines) or "_Every failing model is its own build._"
