"""The root causes' own tables: lowering-tool bugs by diagnostic (models, downloads, the
reproducer and whether it reproduces), the dtypes and features the device lacks (with the
ops and modules that need them), and the index of every reproducer."""

from __future__ import annotations

from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

import pandas as pd

from sweeper.report import repro_status
from sweeper.report.aggregate import ranked
from sweeper.report.escape import code, compact, md, num
from sweeper.report.findings import reproducer
from sweeper.report.load import SweepData
from sweeper.report.root_causes import Cause, blocker_causes, ops_of, reproducers
from sweeper.report.tables import examples, long_table, repro_link

COLUMNS = ["cause", "models", "downloads", "examples", "repro", "status", "said"]


def cause_frame(data: SweepData, folder: Path | None, kinds: tuple[str, ...]) -> pd.DataFrame:
    """One row per cause of ``kinds`` blocking a failing model: models, downloads, example
    ids (most downloaded first), and for a lowering-tool bug its reproducer and status."""
    m = data.models
    failing = (m["category"] != "pass").to_numpy()
    rows: dict[Cause, set[int]] = defaultdict(set)
    for row, cause in blocker_causes(data):
        if cause is not None and cause.kind in kinds and failing[row]:
            rows[cause].add(row)
    if not rows:
        return pd.DataFrame(columns=COLUMNS)
    order = ranked(m)
    weights, ids = order["_w"].to_dict(), order["model_id"].to_dict()
    rank = {row: i for i, row in enumerate(order.index)}
    repros = reproducers(data)
    out = []
    for cause, found in rows.items():
        repro = repros.get(cause, "")
        outcome = repro_status.read_outcome(folder, repro)
        status = outcome.against(cause.signature) if repro else ""
        out.append({"cause": cause, "models": len(found), "downloads": int(sum(weights[r] for r in found)),
                    "examples": [ids[r] for r in sorted(found, key=rank.get)[:3]], "repro": repro,
                    "status": status, "said": outcome.signature})
    frame = pd.DataFrame(out, columns=COLUMNS)
    frame["_key"] = frame["cause"].map(tuple)
    return frame.sort_values(["downloads", "models", "_key"], ascending=[False, False, True]).drop(columns="_key")


def repro_cell(repro: str, status: str, said: str, prefix: str = "") -> str:
    """The reproducer's link and, when it does not reproduce its cause, the mark that says so."""
    if not repro:
        return "—"
    link = repro_link(repro).replace(f"]({repro})", f"]({prefix}{repro})")
    note = repro_status.mark(status, said)
    return f"{link} ⚠ {md(note, 140)}" if note else link


def tool_table(frame: pd.DataFrame, *, weighted: bool, link: bool, shown: int, prefix: str = "") -> str:
    """Lowering-tool bugs, one row per (op, diagnostic signature)."""
    headers = ["op", "diagnostic", "models", "downloads", "examples", "reproducer"]
    keep = headers if weighted else [h for h in headers if h != "downloads"]
    rows = []
    for r in frame.itertuples(index=False):
        cells = dict(zip(headers, [code(r.cause.name) if r.cause.name else md("whole graph (no op named)"),
                                   md(r.cause.signature, 160), num(r.models), compact(r.downloads),
                                   examples(r.examples, link), repro_cell(r.repro, r.status, r.said, prefix)]))
        rows.append([cells[h] for h in keep])
    return long_table(keep, rows, "lowering-tool bugs", shown=shown)


def gap_table(data: SweepData, frame: pd.DataFrame, *, weighted: bool, link: bool) -> str:
    """Dtypes and features the device lacks: models, downloads, and what needs them."""
    headers = ["gap", "models", "downloads", "ops refused for it", "where in the models", "examples"]
    keep = headers if weighted else [h for h in headers if h != "downloads"]
    rows = []
    for r in frame.itertuples(index=False):
        ops, modules = _needs(data, r.cause)
        cells = dict(zip(headers, [r.cause.label(), num(r.models), compact(r.downloads), ops, modules,
                                   examples(r.examples, link)]))
        rows.append([cells[h] for h in keep])
    return long_table(keep, rows, "dtype or feature gaps", shown=len(rows))


def _needs(data: SweepData, cause: Cause, shown: int = 6) -> tuple[str, str]:
    """The ops a dtype cause refuses (most models first) and the modules named for them."""
    if cause.kind != "dtype":
        return "—", "—"
    found = ops_of(data, cause.name)
    ops = [f"{code(r.op)} ({num(r.models)})" for r in found.head(shown).itertuples(index=False) if r.op]
    more = len(found) - shown
    modules = Counter(mod for mods in found["modules"] for mod in mods)
    where = ", ".join(md(name) for name, _ in modules.most_common(4)) or "not named (eager refusals)"
    return ", ".join(ops) + (f", {num(more)} more" if more > 0 else ""), where


def repro_index(data: SweepData, folder: Path | None, tool: pd.DataFrame, *, prefix: str = "") -> str:
    """Every reproducer in the sweep folder: the lowering-tool bug it stands for, the models
    whose blockers name it, whether it reproduces, and the command that runs it."""
    named: dict[str, set[int]] = defaultdict(set)
    b = data.blockers
    for row, message in zip(b["row"].tolist(), b["message"].tolist()) if not b.empty else []:
        repro = reproducer(message)
        if repro:
            named[repro].add(row)
    files = sorted({*named, *_files(folder)})
    if not files:
        return "_No reproducers in this sweep._"
    stands = {r.repro: r.cause for r in tool.itertuples(index=False) if r.repro}
    rows = []
    for repro in files:
        cause = stands.get(repro)
        outcome = repro_status.read_outcome(folder, repro)
        status = outcome.against(cause.signature if cause else "")
        rows.append([repro_link(repro).replace(f"]({repro})", f"]({prefix}{repro})"),
                     md(cause.text(), 160) if cause else "— (another variant of a bug above)",
                     num(len(named.get(repro, ()))), md(status), code(f"python {repro}")])
    return long_table(["reproducer", "stands for", "models", "last run", "command"], rows, "reproducers",
                      shown=len(rows))


def _files(folder: Path | None) -> list[str]:
    """The reproducer scripts a sweep folder holds (``repros/NAME.py``)."""
    if folder is None or not (Path(folder) / "repros").is_dir():
        return []
    return [f"repros/{p.name}" for p in sorted((Path(folder) / "repros").glob("*.py"))]


def summary_rows(frame: pd.DataFrame) -> list[dict[str, Any]]:
    """Causes as summary.json lists them."""
    return [{"cause": r.cause.text(), "kind": r.cause.kind, "op": r.cause.name, "signature": r.cause.signature,
             "models": int(r.models), "downloads": int(r.downloads), "examples": list(r.examples),
             "reproducer": r.repro, "reproducer_status": r.status}
            for r in frame.itertuples(index=False)]
