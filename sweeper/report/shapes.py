"""The report's "Shapes" section: what lengths that vary cost on the device.

Read from each record's shapes findings (``report.shape_fields`` columns): the models
that run every shape with one symbolic graph, those that recompile for each new shape
(and the compiles a workload of ``WORKLOAD_LENGTHS`` lengths costs them), those that fail
at a shape (by the blocker the shapes stage found: op, kind, origin), and the padding
check (right-padding to a bucket against the unpadded run). The roadmap's line on
symbolic shapes comes from here: the compiles such support would save, weighted by the
downloads of the models that recompile.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pandas as pd

from sweeper.checks.shapes import WORKLOAD_LENGTHS
from sweeper.report.aggregate import grouped, weight
from sweeper.report.escape import code, compact, md, model_link, num, pct, table
from sweeper.report.load import SweepData

RAN = ("symbolic", "static", "fails", "timeout")
VERDICT_LABELS = {
    "symbolic": "one graph for every shape (symbolic)",
    "static": "recompile for each new shape (static)",
    "fails": "fail at a shape",
    "timeout": "ran out of the stage's time (--shapes-timeout; earlier stages kept)",
}
INTRO = (
    "The shapes stage calls the compiled model again at a longer sequence (more audio samples) and with one more "
    "row, as users feed it; the compile stage's graphs serve its own shape. A device that takes static shapes only "
    "compiles each new shape anew. Elsewhere the stage does what a user's `torch.compile` does by default "
    "(automatic dynamic shapes): the second size of a dimension recompiles it symbolic, and a third size must reuse "
    "that graph (symbolic); where automatic dynamic shapes are off, a `dynamic=True` compile is tried instead. "
    "Padding: the input cut to three quarters of its length and right-padded back with the attention mask off must "
    "give the unpadded run's outputs on the real positions, on the device; a difference is the device's only when "
    "the CPU's own padded run agrees with its unpadded one."
)
# The padding outcomes in report.md's line, in the page's table's words (shorter where it explains).
SAID = {("pass", ""): "same outputs on the real positions", ("fail", "device"): "differs on the device alone",
        ("fail", "model"): "differs on the CPU too (the model's masking)", ("fail", ""): "differs (origin not proven)",
        ("not_checked", ""): "not checked"}


@dataclass
class ShapesView:
    """The section's figures."""

    ran: int  # models whose shapes stage gave a verdict
    weighted: bool
    total_downloads: int
    verdicts: pd.DataFrame  # verdict, models, downloads
    workload_lengths: int
    static_compiles: int  # compiles a workload costs the models that recompile, summed
    saved_compiles: int  # of those, what one symbolic graph per graph would save
    saved_downloads: int  # downloads of the models that would save them
    saved_models: int
    failures: pd.DataFrame  # kind, op, origin, shapes, models, downloads, examples
    padding: pd.DataFrame  # padding_status, padding_origin, models, downloads
    padding_failures: pd.DataFrame  # model_id, downloads, padding_origin, padding_output
    not_reached: int  # models without a shapes verdict: the stage blocked, not recorded or never tried
    partial: int = 0  # models with a verdict whose own stage is not a pass (pipelines: some components ran it)


def shapes_view(data: SweepData) -> ShapesView | None:
    """The section's figures, or None for a sweep that did not run the shapes stage."""
    if "shapes" not in data.stages:
        return None
    m = data.models
    ran = m[m["shapes_verdict"].isin(RAN)]
    w = weight(ran) if data.has_downloads else pd.Series(1, index=ran.index)
    verdicts = pd.DataFrame(
        [{"verdict": v, "models": int((ran["shapes_verdict"] == v).sum()), "downloads": int(w[ran["shapes_verdict"] == v].sum())}
         for v in RAN])  # fmt: skip
    static = ran[ran["shapes_verdict"] == "static"]
    lengths = WORKLOAD_LENGTHS
    per_shape = static["shapes_graphs_per_shape"].fillna(0).astype("int64")
    workload = static["shapes_workload_compiles"].fillna(0).astype("int64")
    saved = workload - per_shape  # one symbolic graph per graph instead of one per length
    bl = data.blockers
    failing = bl[bl["stage"] == "shapes"].drop_duplicates(["row", "kind", "op", "origin"])
    failing = failing[["row", "kind", "op", "origin"]].fillna({"op": ""}).join(
        m[["key", "model_id", "downloads", "rank", "shapes_failed_at"]], on="row")
    failures = grouped(failing, ["kind", "op", "origin"])
    if not failures.empty:
        at = failing.groupby(["kind", "op", "origin"])["shapes_failed_at"].agg(
            lambda s: ", ".join(sorted({str(x) for x in s.dropna()})) or "—")
        failures["shapes"] = [at.get((k, o, g), "—") for k, o, g in zip(failures["kind"], failures["op"], failures["origin"])]
    checked = m[m["padding_status"].notna()].fillna({"padding_origin": ""})
    padding = grouped(checked, ["padding_status", "padding_origin"]) if not checked.empty else pd.DataFrame()
    bad = checked[checked["padding_status"] == "fail"].sort_values("rank", kind="stable")
    return ShapesView(
        ran=len(ran), weighted=data.has_downloads, total_downloads=int(w.sum()), verdicts=verdicts,
        workload_lengths=lengths, static_compiles=int(workload.sum()), saved_compiles=int(saved.sum()),
        saved_downloads=int(w[static.index].sum()), saved_models=len(static), failures=failures,
        padding=padding, padding_failures=bad[["model_id", "downloads", "padding_origin", "padding_output"]],
        not_reached=len(m) - len(ran),
        partial=int((ran[data.stage_column("shapes")] != "pass").sum()) if data.stage_column("shapes") in ran.columns
        else 0,
    )


def render(view: ShapesView | None, *, link: bool, rows: int | None = None, page: str = "") -> str:
    """The section's Markdown body: whole (``rows`` None: the details page), or report.md's
    short form: the verdicts, then one line each of the failures at a shape and the padding
    outcomes, naming ``rows`` of each, and a link to ``page``."""
    if view is None:
        return "_The sweep did not run the shapes stage (`--stages` without `shapes`)._"
    w = view.weighted
    head = ["models", *(["downloads", "share of the downloads run"] if w else [])]
    verdicts = []
    for r in view.verdicts.itertuples(index=False):
        share = pct(r.downloads / view.total_downloads) if view.total_downloads else pct(None)
        verdicts.append([md(VERDICT_LABELS[r.verdict]), num(r.models), *([compact(r.downloads), share] if w else [])])
    parts = [INTRO, table(["shapes", *head], verdicts, "l" + "r" * len(head))]
    parts.append(f"{num(view.ran)} models ran the stage; {num(view.not_reached)} did not reach it (an earlier stage "
                 "failed, or a compile with a blocker: another shape would only meet it again)."
                 + (f" {num(view.partial)} of the {num(view.ran)} are pipelines some of whose components ran it while "
                    "another component's failure blocks the pipeline's stage (the Stages table counts the pipeline "
                    "as blocked)." if view.partial else ""))
    if view.saved_models:
        parts.append(f"A workload of {view.workload_lengths} distinct lengths costs the models that recompile "
                     f"{num(view.static_compiles)} compiles in all ({view.workload_lengths} per graph of each model); "
                     f"one symbolic graph per graph would save {num(view.saved_compiles)}.")
    if rows is not None:
        return "\n\n".join([*parts, _short(view, link=link, rows=rows, page=page)])
    parts += ["## Failures at a shape", _failures(view, link=link)]
    parts += ["## Padding to buckets", _padding(view, link=link)]
    return "\n\n".join(parts)


def _short(view: ShapesView, *, link: bool, rows: int, page: str) -> str:
    """The failures at a shape and the padding outcomes in a line each, ``rows`` named."""
    top = [f"{md(r.kind)}{' ' + code(r.op) if r.op else ''} ({md(r.origin)}, at {md(r.shapes)}, {num(r.models)} models)"
           for r in view.failures.head(rows).itertuples(index=False)]
    failures = (f"Failures at a shape by blocker ({num(len(view.failures))}): {', '.join(top)}." if top
                else "No model failed at a shape.")
    counts = []
    for r in view.padding.itertuples(index=False):
        said = f"{SAID.get((r.padding_status, r.padding_origin), r.padding_status)}: {num(r.models)}"
        differ = view.padding_failures[view.padding_failures["padding_origin"].fillna("") == r.padding_origin]
        if r.padding_status == "fail" and len(differ):  # name the models, as the page's table does
            more = f" and {num(len(differ) - rows)} more" if len(differ) > rows else ""
            said += f" ({', '.join(model_link(i, link=link) for i in differ['model_id'].head(rows))}{more})"
        counts.append(said)
    padding = (f"Padding to buckets: {'; '.join(counts)}." if counts
               else "No model takes an attention mask over its length: padding was not checked.")
    if view.failures.empty and view.padding.empty:  # the page would say no more
        return f"{failures} {padding}"
    return f"{failures} {padding} Each failure at a shape and each padding outcome, with downloads and models: [{page}]({page})."


def _failures(view: ShapesView, *, link: bool) -> str:
    if view.failures.empty:
        return "_No model failed at a shape._"
    headers = ["kind", "op", "origin", "at shape", "models", *(["downloads"] if view.weighted else []), "examples"]
    rows = [[md(r.kind), code(r.op) if r.op else "", md(r.origin), md(r.shapes), num(r.models),
             *([compact(r.downloads)] if view.weighted else []), ", ".join(model_link(i, link=link) for i in r.examples)]
            for r in view.failures.itertuples(index=False)]  # fmt: skip
    return table(headers, rows, "llll" + "r" * (2 if view.weighted else 1) + "l")


def _padding(view: ShapesView, *, link: bool) -> str:
    if view.padding.empty:
        return "_No model takes an attention mask over its length: padding was not checked._"
    words = {("pass", ""): "same outputs on the real positions", ("fail", "device"): "differs on the device alone",
             ("fail", "model"): "differs on the CPU too (the model's masking)", ("fail", ""): "differs (origin not proven)",
             ("not_checked", ""): "not checked (no attention mask over the length, or the CPU cannot run it)"}
    rows = [[md(words.get((r.padding_status, r.padding_origin), f"{r.padding_status} {r.padding_origin}".strip())),
             num(r.models), *([compact(r.downloads)] if view.weighted else [])]
            for r in view.padding.itertuples(index=False)]  # fmt: skip
    text = table(["padding", "models", *(["downloads"] if view.weighted else [])], rows,
                 "lr" + ("r" if view.weighted else ""))
    bad = view.padding_failures
    if not bad.empty:
        listed = [[model_link(r.model_id, link=link), *([compact(r.downloads)] if view.weighted else []),
                   md(r.padding_origin or "not proven"), code(r.padding_output) if r.padding_output else ""]
                  for r in bad.itertuples(index=False)]  # fmt: skip
        headers = ["model", *(["downloads"] if view.weighted else []), "whose", "output that differs"]
        text += "\n\n" + table(headers, listed, "l" + ("r" if view.weighted else "") + "ll")
    return text


def summary(view: ShapesView | None) -> dict[str, Any] | None:
    """The section's figures for summary.json."""
    if view is None:
        return None
    return {
        "ran": view.ran,
        "verdicts": view.verdicts.to_dict(orient="records"),
        "workload_lengths": view.workload_lengths,
        "static_compiles": view.static_compiles,
        "saved_compiles": view.saved_compiles,
        "saved_models": view.saved_models,
        "saved_downloads": view.saved_downloads,
        "failures": [{k: (v if not hasattr(v, "item") else v.item()) for k, v in row.items()}
                     for row in view.failures.drop(columns=["examples"], errors="ignore").to_dict(orient="records")],
        "padding": [{k: (v if not hasattr(v, "item") else v.item()) for k, v in row.items()}
                    for row in view.padding.drop(columns=["examples"], errors="ignore").to_dict(orient="records")],
    }
