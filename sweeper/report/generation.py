"""The report's "Generation" section: how the models that generate fare when they do.

Read from each record's generate-stage findings (``report.generation_fields`` columns):
the models that generate by task, each mode's verdict against the CPU's tokens (eager, and
compiled with a static cache as transformers documents it), the compiled runs that
recompile after the first decode step or could not take a static cache, and the blockers
the stage found (op, kind, origin), which the Fix next plan ranks with every other
stage's. Only models that generate have the stage, so every figure here counts among them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pandas as pd

from sweeper.checks.generation import NEW_TOKENS
from sweeper.report.aggregate import grouped, reached_device, weight
from sweeper.report.escape import code, compact, md, model_link, num, pct, table
from sweeper.report.generation_fields import MODES, PASSING, RAISED
from sweeper.report.load import SweepData

STAGE = "generate"
# What "end to end" holds for a model that generates: the generate stage is one of its stages.
END_TO_END = "for models that generate, end to end includes generating, eager and compiled with a static cache"
TASK_ROWS = 5  # tasks in report.md; the details page has them all
BLOCKER_ROWS = 5
INTRO = (
    "Models whose class can generate decode {tokens} new tokens greedily on the device, eager (the model's default "
    "cache) and compiled as transformers documents it (a static cache, the forward compiled with the device's "
    "backend), and each mode's tokens are judged against the CPU's. A mode passes when its tokens equal the CPU's or "
    "part from them at a tie: the device picked a token the CPU scored within the numerics tolerance of its best. "
    "A model failing the generate stage does not run end to end."
)
PIPELINES = (  # said only when a pipeline sampled: its findings are images, not tokens
    " A diffusers pipeline with a sampling entry samples a few steps through its own pipeline class, eager and with "
    "its denoiser compiled, and its images are compared with the CPU's (kind *diffusion*; no cache, no ties)."
)


@dataclass
class GenerationView:
    """The section's figures."""

    weighted: bool
    reached: int  # models that reached the device: the share of them that generate
    generates: int  # models with a generate stage (their class can generate)
    downloads: int
    ran: int  # of those, the models whose stage ran (not blocked by an earlier stage)
    passed: int  # models whose generate stage passed
    kinds: dict[str, int]  # decoder-only, encoder-decoder, or a kind this version does not know
    tasks: pd.DataFrame  # pipeline_tag, models, downloads, passed
    modes: pd.DataFrame  # mode, ran, passed, ties, wrong, raised
    recompiling: pd.DataFrame  # model_id, downloads, generation_recompiles, generation_every_step
    not_static: pd.DataFrame  # model_id, downloads, generation_class
    blockers: pd.DataFrame  # kind, op, origin, models, downloads, examples
    models: pd.DataFrame  # every model that generates, in rank order


def generation_view(data: SweepData) -> GenerationView | None:
    """The section's figures, or None when no model generates (no section)."""
    m = data.models
    column = data.stage_column(STAGE)
    has = m[column].notna() if column in m.columns else pd.Series(False, index=m.index)
    gen = m[has | m["generation_kind"].notna()]
    if gen.empty:
        return None
    status = gen[column] if column in gen.columns else pd.Series(None, index=gen.index, dtype=object)
    w = weight(gen)
    tasks = gen.assign(pipeline_tag=gen["pipeline_tag"].fillna("(none)"), _passed=status.eq("pass"))
    by_task = grouped(tasks, ["pipeline_tag"])
    by_task["passed"] = by_task["pipeline_tag"].map(tasks.groupby("pipeline_tag")["_passed"].sum()).astype("int64")
    recompiling = gen[gen["generation_recompiles"].fillna(0) > 0]
    bl = data.blockers
    failing = bl[bl["stage"] == STAGE].drop_duplicates(["row", "kind", "op", "origin"])[["row", "kind", "op", "origin"]]
    failing = failing.fillna({"op": ""}).join(m[["key", "model_id", "downloads", "rank"]], on="row")
    return GenerationView(
        weighted=data.has_downloads, reached=int(reached_device(data).sum()), generates=len(gen),
        downloads=int(w.sum()), ran=int((~status.isin(["blocked"]) & status.notna()).sum()),
        passed=int(status.eq("pass").sum()), kinds=_kinds(gen),
        tasks=by_task, modes=_modes(gen), recompiling=recompiling, not_static=gen[gen["generation_static"] == "not static"],
        blockers=grouped(failing, ["kind", "op", "origin"]),
        models=gen,
    )


def _kinds(gen: pd.DataFrame) -> dict[str, int]:
    """Models per kind of generation, the most common first (then by name: the same order
    on every run)."""
    counts = gen["generation_kind"].dropna().value_counts()
    return {k: int(n) for k, n in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))}


def _modes(gen: pd.DataFrame) -> pd.DataFrame:
    """Per mode: the models that ran it, passed (equal or tie), tied, made other tokens
    (or images) than the CPU's (numerics or shape), or raised."""
    rows = []
    for mode in MODES:
        v = gen[f"generation_{mode}"]
        rows.append({"mode": mode, "ran": int(v.notna().sum()), "passed": int(v.isin(PASSING).sum()),
                     "ties": int(v.eq("tie").sum()), "wrong": int(v.isin(["numerics", "shape"]).sum()),
                     "raised": int(v.eq(RAISED).sum())})
    return pd.DataFrame(rows)


def section(view: GenerationView, *, link: bool, page: str, lines: int) -> list[str]:
    """report.md's heading and body: whole when the body fits in ``lines``, else short (a
    report.md that stays readable on a screen or two; the details page has it all)."""
    body = render(view, link=link, short=False, page=page)
    if body.count("\n") > lines:
        body = render(view, link=link, short=True, page=page)
    return ["## Generation", body]


def render(view: GenerationView, *, link: bool, short: bool, page: str) -> str:
    """The section's Markdown body; ``short`` keeps it to a few lines (the mode table and
    one line each of findings and blockers) when report.md would otherwise grow too long."""
    every = (f"Every model that generates, with each mode's verdict, cache and compiles per decoding step, and "
             f"every task and blocker: [{page}]({page}).")
    if short:  # the counts, the modes, and one paragraph of findings, blockers and the page (how: on the page)
        top = [f"{md(r.kind)}{' ' + code(r.op) if r.op else ''} ({md(r.origin)}, {num(r.models)} models)"
               for r in view.blockers.head(3).itertuples(index=False)]
        blockers = f"Blockers of the generate stage ({num(len(view.blockers))}): {', '.join(top)}." if top else ""
        findings = " ".join(p for p in (_compiled_line(view, link=link), blockers, every) if p)
        return "\n\n".join([_counts(view), mode_table(view), findings])
    parts = [_intro(view), _counts(view), task_table(view, rows=TASK_ROWS), mode_table(view),
             _compiled_line(view, link=link), blocker_table(view, link=link, rows=BLOCKER_ROWS), every]
    return "\n\n".join(p for p in parts if p)


def _intro(view: GenerationView) -> str:
    return INTRO.format(tokens=NEW_TOKENS) + (PIPELINES if "diffusion" in view.kinds else "")


def _counts(view: GenerationView) -> str:
    """How many generate, of which kinds, how many ran the stage and passed it."""
    about = [f"{md(k)} {num(n)}" for k, n in view.kinds.items()]
    about += [f"{compact(view.downloads)} downloads"] if view.weighted else []
    return (f"{num(view.generates)} of the {num(view.reached)} models that reached the device generate"
            + (f" ({', '.join(about)})" if about else "") + f"; {num(view.ran)} ran the stage"
            + (f" ({num(view.generates - view.ran)} blocked by an earlier stage)" if view.generates > view.ran else "")
            + f" and {num(view.passed)} passed it.")


def task_table(view: GenerationView, *, rows: int | None) -> str:
    """Models that generate by task, most downloaded first."""
    frame = view.tasks if rows is None else view.tasks.head(rows)
    w = view.weighted
    body = [[md(r.pipeline_tag), num(r.models), *([compact(r.downloads)] if w else []), num(r.passed)]
            for r in frame.itertuples(index=False)]
    more = f"\n\n…and {num(len(view.tasks) - len(frame))} more tasks." if len(view.tasks) > len(frame) else ""
    return table(["task", "models", *(["downloads"] if w else []), "generate passes"], body,
                 "lr" + ("r" if w else "") + "r") + more


def mode_table(view: GenerationView) -> str:
    """Each mode's verdicts among the models that ran it."""
    body = [[md(r.mode), num(r.ran), f"{num(r.passed)} ({pct(r.passed / r.ran if r.ran else None)})",
             num(r.ties), num(r.wrong), num(r.raised)] for r in view.modes.itertuples(index=False)]
    return table(["mode", "ran", "pass (equal or tie)", "ties", "wrong output", "raised"], body, "lrrrrr")


def _compiled_line(view: GenerationView, *, link: bool, shown: int = 3) -> str:
    """The compiled runs that recompile per token, and those without a static cache."""
    every = int(view.recompiling["generation_every_step"].eq(True).sum())
    recompiles = (f"{num(len(view.recompiling))} model(s) recompile after the first decode step, which a static cache "
                  f"should make needless ({num(every)} at every step)" + _examples(view.recompiling, link, shown)
                  if len(view.recompiling) else "no model recompiles after the first decode step")
    own = (f"{num(len(view.not_static))} build their own cache, so their forward compiled without a static cache"
           + _examples(view.not_static, link, shown) if len(view.not_static) else "every compiled run had a static cache")
    return f"Compiled: {recompiles}; {own}."


def _examples(frame: pd.DataFrame, link: bool, n: int) -> str:
    """The ``n`` most downloaded of ``frame``'s models (the details page lists them all)."""
    ids = frame.assign(_w=weight(frame)).sort_values(["_w", "rank"], ascending=[False, True], kind="stable")["model_id"]
    ids = ids.head(n)
    return f": {', '.join(model_link(i, link=link) for i in ids)}" if len(ids) else ""


def blocker_table(view: GenerationView, *, link: bool, rows: int | None) -> str:
    """The generate stage's blockers by kind, op and origin."""
    if view.blockers.empty:
        return "_Nothing blocked the generate stage._"
    frame = view.blockers if rows is None else view.blockers.head(rows)
    w = view.weighted
    body = [[md(r.kind), code(r.op) if r.op else "", md(r.origin), num(r.models), *([compact(r.downloads)] if w else []),
             ", ".join(model_link(i, link=link) for i in r.examples)] for r in frame.itertuples(index=False)]
    more = f"\n\n…and {num(len(view.blockers) - len(frame))} more." if len(view.blockers) > len(frame) else ""
    headers = ["blocker of the generate stage", "op", "origin", "models", *(["downloads"] if w else []), "examples"]
    return table(headers, body, "lllr" + ("r" if w else "") + "l") + more


def details_page(view: GenerationView, *, link: bool) -> list[str]:
    """The details page's parts: every task, every blocker, every model that generates."""
    w, m = view.weighted, view.models
    body = [[model_link(r.model_id, link=link), *([compact(r.downloads)] if w else []), md(r.pipeline_tag or ""),
             md(r.generation_class or ""), md(r.status_ or "not recorded"), md(r.generation_eager or "not run"),
             md(r.generation_compiled or "not run"), md(r.generation_static or ""), md(r.generation_steps or "")]
            for r in m.assign(status_=m.get(f"stage_{STAGE}")).itertuples(index=False)]
    headers = ["model", *(["downloads"] if w else []), "task", "class", "generate", "eager", "compiled", "cache",
               "compiles per step"]
    return [_intro(view), _counts(view), "## By task", task_table(view, rows=None),
            "## Modes", mode_table(view), _compiled_line(view, link=link),
            "## Blockers of the generate stage", blocker_table(view, link=link, rows=None),
            "## Every model that generates", "By rank. *compiles per step*: graphs compiled at each call of the "
            "compiled forward (the prefill first); a static cache compiles at the first two only.",
            table(headers, body, "l" + ("r" if w else "") + "l" * 7)]


def summary(view: GenerationView | None) -> dict[str, Any] | None:
    """The section's figures for summary.json."""
    if view is None:
        return None
    plain = lambda frame: [{k: (v.item() if hasattr(v, "item") else v) for k, v in row.items()}  # noqa: E731
                           for row in frame.drop(columns=["examples"], errors="ignore").to_dict(orient="records")]
    return {"generates": view.generates, "downloads": view.downloads, "ran": view.ran, "passed": view.passed,
            "kinds": view.kinds, "modes": plain(view.modes), "tasks": plain(view.tasks),
            "recompiling": len(view.recompiling), "not_static": len(view.not_static), "blockers": plain(view.blockers)}
