"""The report's tables: roadmap, reasons, findings, fallbacks, breakdowns, failing models
(numerics' are ``report.numerics``'s).

Each function takes aggregated frames and returns one section's Markdown body; every
outside string goes through ``escape`` on the way in. ``report.document`` puts them in
order under their headings; the diff and the page reuse the table helpers.
"""

from __future__ import annotations

import functools
import html
from collections.abc import Callable, Sequence
from typing import Any

import pandas as pd

from sweeper.report.escape import (
    code,
    compact,
    details,
    md,
    model_link,
    num,
    one_line,
    pct,
    table,
)
from sweeper.report.findings import WHOLE_GRAPH, is_whole_graph, sample

SHOWN = 20  # rows shown before the rest collapses
MODEL_ROWS = 100  # failing models listed in report.md; index.html lists every model
MARKS = {"pass": "✅", "fail": "❌", "blocked": "⛔", "skip": "⏭"}
MESSAGE_CHARS = 120


RIGHT = {"#", "k", "rank", "models", "distinct builds", "max abs difference", "models blocked", "downloads blocked", "only blocker of", "downloads freed",
         "downloads", "calls", "tested", "tried", "device verdicts", "pass", "pass rate", "not tested", "not tried",
         "downloads passing", "passing", "passing end to end", "end-to-end pass rate",
         "device pass rate (device verdicts only)", "models freed", "models freed in all", "downloads freed in all",
         "coverage after"}  # fmt: skip


def align_for(headers: Sequence[str]) -> str:
    """Numbers right, text left."""
    return "".join("r" if h in RIGHT else "l" for h in headers)


def examples(ids: Sequence[str], link: bool) -> str:
    """A few example models, comma-separated."""
    return ", ".join(model_link(i, link=link) for i in ids)


def long_table(headers: list[str], rows: list[list[Any]], what: str, *, shown: int = SHOWN) -> str:
    """A table whose rows past ``shown`` collapse into a details block."""
    if not rows:
        return f"_No {what}._"
    align = align_for(headers)
    text = table(headers, rows[:shown], align)
    if len(rows) > shown:
        text += "\n\n" + details(f"{num(len(rows) - shown)} more {what}", table(headers, rows[shown:], align))
    return text


def _dl(weighted: bool, cols: list[str]) -> list[str]:
    """The columns to show: download columns only when the sweep has download counts."""
    return cols if weighted else [c for c in cols if "downloads" not in c]


def _rows(frame: pd.DataFrame, cells: Callable[[Any], list[Any]], headers: list[str], keep: list[str]) -> list[list]:
    """Cells for each row, keeping only the columns whose header is in ``keep``."""
    idx = [i for i, h in enumerate(headers) if h in keep]
    return [[c[i] for i in idx] for c in (cells(r) for r in frame.itertuples(index=False))]


def roadmap_ops(ops: pd.DataFrame, *, weighted: bool, link: bool) -> str:
    """Ops ranked by the downloads they block (with the distinct builds behind the models
    when some were built from their type's default config)."""
    headers = ["#", "op", "kinds", "models blocked", "distinct builds", "downloads blocked", "only blocker of",
               "downloads freed", "examples"]  # fmt: skip

    def cells(r: Any) -> list[Any]:
        return [0, code(r.op), md(r.kinds), num(r.models), num(r.builds), compact(r.downloads), num(r.unlocked_models),
                compact(r.unlocked_downloads), examples(r.examples, link)]  # fmt: skip

    keep = _dl(weighted, headers)
    if (ops["builds"] == ops["models"]).all():
        keep = [h for h in keep if h != "distinct builds"]
    rows = _rows(ops, cells, headers, keep)
    for i, row in enumerate(rows, 1):
        row[0] = i
    return long_table(keep, rows, "ops")


def op_models(per_op: dict[str, tuple[pd.DataFrame, int]], *, weighted: bool, link: bool) -> str:
    """One collapsible list per top op: the models it blocks and what else blocks them."""
    blocks = []
    for op, (frame, total) in per_op.items():
        headers = ["model", *(["downloads"] if weighted else []), "other blockers"]
        rows = [
            [model_link(r.model_id, link=link), *([compact(r.downloads)] if weighted else []),
             ", ".join([*map(code, r.other_ops), *map(md, r.other_reasons)]) or "none: lowering it makes this model pass"]
            for r in frame.itertuples(index=False)
        ]  # fmt: skip
        more = f"\n\n…and {num(total - len(frame))} more (see records.parquet)." if total > len(frame) else ""
        summary = f"{num(total)} model{'s' if total != 1 else ''} blocked by <code>{html.escape(op)}</code>"
        blocks.append(details(summary, table(headers, rows, align_for(headers)) + more))
    return "\n\n".join(blocks) if blocks else "_No ops._"


def reasons(frame: pd.DataFrame, *, weighted: bool, link: bool) -> str:
    """First reasons of models that did not pass."""
    headers = ["reason", "op", "models", "downloads", "examples", "sample message"]

    def cells(r: Any) -> list[Any]:
        return [md(r.reason_kind), code(r.reason_op), num(r.models), compact(r.downloads),
                examples(r.examples, link), md(r.message, MESSAGE_CHARS)]  # fmt: skip

    keep = _dl(weighted, headers)
    return long_table(keep, _rows(frame, cells, headers, keep), "reasons")


def features(frame: pd.DataFrame, *, weighted: bool, link: bool) -> str:
    """Device gaps that are no op to lower: dynamic shapes, dtypes, sparse, forward AD, ..."""
    headers = ["#", "gap", "names", "models blocked", "downloads blocked", "examples"]

    def cells(r: Any) -> list[Any]:
        return [0, md(r.kind), code(r.op) if r.op else "", num(r.models), compact(r.downloads), examples(r.examples, link)]

    keep = _dl(weighted, headers)
    rows = _rows(frame, cells, headers, keep)
    for i, row in enumerate(rows, 1):
        row[0] = i
    return long_table(keep, rows, "feature gaps")


def findings(frame: pd.DataFrame, *, weighted: bool, link: bool, what: str, shown: int = SHOWN) -> str:
    """Blockers of one origin by kind and op, with a sample message (every blocker, not only
    first ones). A lowering-tool failure that names no op is a row per failing graph: what it
    is about, its failure signature and its reproducer (``report.findings``)."""
    headers = ["kind", "op", "models", "downloads", "examples", "sample message", "reproducer"]

    def cells(r: Any) -> list[Any]:
        return [md(r.kind), subject_cell(r.op, r.graph, r.signature), num(r.models), compact(r.downloads),
                examples(r.examples, link), md(sample(r.kind, r.message), MESSAGE_CHARS), repro_link(r.repro)]  # fmt: skip

    keep = _dl(weighted, headers)
    if not frame["repro"].astype(bool).any():
        keep.remove("reproducer")
    return long_table(keep, _rows(frame, cells, headers, keep), what, shown=shown)


def subject_cell(op: str, graph: str, signature: str) -> str:
    """The op, or for an op-less graph failure ``whole graph (no op named)`` and its key."""
    if op:
        return code(op)
    if is_whole_graph(graph, signature):
        return md(WHOLE_GRAPH) + (f" {code(graph)}" if graph else "")
    return ""


def repro_link(repro: str) -> str:
    """A link to a reproducer inside the sweep folder (``findings.reproducer`` vouches for
    the path: ``repros/`` and a plain file name)."""
    return f"[{md(repro.rsplit('/', 1)[-1])}]({repro})" if repro else ""


def not_tested(frame: pd.DataFrame, *, weighted: bool, link: bool) -> str:
    """Environment outcomes and skips."""
    headers = ["outcome", "kind", "models", "downloads", "examples"]

    def cells(r: Any) -> list[Any]:
        return [r.category, md(r.reason_kind), num(r.models), compact(r.downloads), examples(r.examples, link)]

    keep = _dl(weighted, headers)
    return long_table(keep, _rows(frame, cells, headers, keep), "environment outcomes or skips")


def per_item(
    frame: pd.DataFrame, item: str, title: str, *, weighted: bool, link: bool, as_code: bool, what: str = ""
) -> str:
    """Fallback ops, graph-break reasons or compile problems."""
    has_calls = "calls" in frame.columns
    headers = [title, "models", "downloads", *(["calls"] if has_calls else []), "examples"]

    def cells(r: Any) -> list[Any]:
        value = getattr(r, item)
        label = code(value, MESSAGE_CHARS) if as_code else md(value, MESSAGE_CHARS)
        calls = [num(r.calls)] if has_calls else []
        return [label, num(r.models), compact(r.downloads), *calls, examples(r.examples, link)]

    keep = _dl(weighted, headers)
    return long_table(keep, _rows(frame, cells, headers, keep), what or f"{title}s")


def graph_breaks(frame: pd.DataFrame, *, weighted: bool, link: bool) -> str:
    """Graph-break causes, the one breaking the most models first."""
    headers = ["cause", "models", "passing", "downloads", "examples"]

    def cells(r: Any) -> list[Any]:
        return [md(r.reason, MESSAGE_CHARS), num(r.models), num(r.passing), compact(r.downloads), examples(r.examples, link)]

    keep = _dl(weighted, headers)
    return long_table(keep, _rows(frame, cells, headers, keep), "graph-break causes")


def breakdown(frame: pd.DataFrame, column: str, *, weighted: bool) -> str:
    """Outcomes per library, model type or task: end-to-end figures first, then the device
    pass rate over device verdicts alone."""
    headers = [column, "models", "tried", "passing end to end", "end-to-end pass rate", "downloads",
               "downloads passing", "not tried", "device verdicts", "device pass rate (device verdicts only)"]  # fmt: skip

    def cells(r: Any) -> list[Any]:
        return [md(getattr(r, column)), num(r.models), num(r.tried), num(r.passed), pct(r.tried_pass_rate),
                compact(r.downloads), pct(r.download_share), num(r.not_tried), num(r.tested),
                pct(r.device_pass_rate)]  # fmt: skip

    keep = _dl(weighted, headers)
    return long_table(keep, _rows(frame, cells, headers, keep), "groups")


@functools.lru_cache(maxsize=65536)  # reasons repeat across thousands of models
def reason_cell(kind: Any, op: Any, message: Any, more: int = 0) -> str:
    """``kind`` + op + the message, escaped and cut short; ``more`` other blockers noted."""
    if not isinstance(kind, str):
        return ""
    parts = [md(kind)]
    if isinstance(op, str) and op:
        parts.append(code(op))
    text = " ".join(parts)
    msg = one_line(message)
    text = f"{text}: {md(msg, MESSAGE_CHARS)}" if msg else text
    return text + (f" (+{more} more blocker{'s' if more > 1 else ''})" if more > 0 else "")


def model_table(models: pd.DataFrame, stages: list[str], *, weighted: bool, link: bool) -> str:
    """One row per model: rank, model, downloads, a mark per stage, reason, repro."""
    headers = ["rank", "model", *(["downloads"] if weighted else []), *stages, "status", "reason", "repro"]
    marks = zip(*[[MARKS.get(v or "", "—") for v in models[f"stage_{s}"].tolist()] for s in stages]) if stages else None
    columns = [models[c].tolist() for c in MODEL_TABLE_COLUMNS]  # plain lists: fast for 100,000 rows
    lines = []
    for rank, model_id, downloads, status, kind, op, message, count, repro, key, arch in zip(*columns):
        model = model_link(model_id, link=link)
        if key != model_id and arch:  # one checkpoint tried with several head classes (zoo)
            model += f" ({md(arch)})"
        cells = [num(None if rank is pd.NA else rank), model]
        if weighted:
            cells.append(compact(None if downloads is pd.NA else downloads))
        if marks is not None:
            cells.extend(next(marks))
        cells += [status, reason_cell(kind, op, message, count - 1), code(repro)]
        lines.append("| " + " | ".join(cells) + " |")
    legend = "✅ pass · ❌ fail · ⛔ blocked by an earlier stage · ⏭ skipped · — not recorded"
    head = table(headers, [], align_for(headers))
    return legend + "\n\n" + head + ("\n" + "\n".join(lines) if lines else "")


MODEL_TABLE_COLUMNS = [
    "rank", "model_id", "downloads", "status", "reason_kind", "reason_op", "reason_message", "blocker_count", "repro",
    "key", "architecture",
]  # fmt: skip
