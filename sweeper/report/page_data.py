"""The data behind index.html: one compact JSON object built from a sweep's analysis.

Per-model values are stored column by column; repeated text (tasks, model types, reasons,
messages, ops, repro commands with the model id taken out) is stored once in ``strings``
and referred to by index, so 100,000 models stay a few megabytes and parse fast.
"""

from __future__ import annotations

import re
from typing import Any

import numpy as np
import pandas as pd

from sweeper.records import Origin
from sweeper.report import document, findings, lowering_plan
from sweeper.report.analysis import Analysis
from sweeper.report.escape import one_line
from sweeper.report.load import CATEGORIES, SweepData
from sweeper.report.meta import device_name, identity_rows

# One letter per stage status on the page; crash, timeout and oom apart from fail, as in the
# report's stage table. Anything else (a stage never recorded): "-".
STAGE_CODES = {"pass": "p", "fail": "f", "crash": "c", "timeout": "t", "oom": "o", "blocked": "b", "skip": "s"}
ID_MARK = "\x00"  # stands for the model id inside a stored repro command
ORIGINS = tuple(o.value for o in Origin)
REPRO_PATH = re.compile(r"^repros/[\w.-]+\.py$")  # a file in the sweep folder, nothing else becomes a link
FIX_NEXT_CHART = "top_blockers.png"  # draws the plan's steps (charts.py), whatever its old name says


def fix_next_title(weighted: bool) -> str:
    """The plan chart's title, and its caption on the page."""
    return f"Fix next: {'downloads' if weighted else 'models'} freed per step"


def origins(models: pd.DataFrame) -> pd.Series:
    """Each model's origin, as the report counts it (the record's ``outcome``); a skipped
    model shows its reason's; a passing one none."""
    cat = models["category"]
    skipped = cat.eq("skip") & models["reason_origin"].notna()
    return cat.where(cat.isin(ORIGINS), models["reason_origin"].where(skipped))


class Strings:
    """Interned text: each distinct string stored once, referred to by its index."""

    def __init__(self) -> None:
        self.items: list[str] = [""]
        self._index: dict[str, int] = {"": 0}

    def __call__(self, value: Any) -> int:
        """The index of ``value`` (0 for a missing value)."""
        if value.__class__ is str:  # the usual case first: one dict lookup
            found = self._index.get(value)
            if found is not None:
                return found
        elif value is None or value is pd.NA or (isinstance(value, float) and value != value):
            return 0
        text = value if isinstance(value, str) else str(value)
        found = self._index.get(text)
        if found is None:
            found = self._index[text] = len(self.items)
            self.items.append(text)
        return found

    def column(self, values: pd.Series, clean: Any = None) -> list[int]:
        """Indexes for a whole column; ``clean`` is applied once per distinct value."""
        codes, uniques = pd.factorize(values, use_na_sentinel=True)
        index = np.array([self(clean(u) if clean else u) for u in uniques] + [0], dtype=np.int64)
        return index[codes].tolist()  # a missing value (code -1) takes the trailing 0


def page_data(a: Analysis, *, charts: list[str], hub: str | None, compare: Any = None, compare_name: str = "",
              history: str | None = None) -> dict:
    """Everything index.html shows, as plain JSON-ready data. ``hub`` is the base URL model
    ids link to (None: no links); ``compare`` a ``diff.DiffResult`` against another sweep;
    ``history`` the history page beside it (None: none)."""
    strings = Strings()
    data = a.data
    out = {
        "title": f"Model sweep on {device_name(data.meta, data.models)}",
        "header": header_rows(a),
        "notes": [n.replace("`", "") for n in document.notes(a)],
        "fix_next": fix_next(a.plan),
        "history": history,
        "headline": headline(a),
        "charts": [[c, fix_next_title(a.weighted) if c == FIX_NEXT_CHART else document.CHART_TITLES.get(c, c)]
                   for c in charts],
        "stages": list(data.stages),
        "roadmap": roadmap_rows(a),
        "lowering_tool": finding_rows(a.lowering_tool),
        "hub": hub,
        "rows": model_columns(data, strings),
        "compare": None,
    }
    if compare is not None:
        out["rows"]["change"] = change_column(data, compare, strings)
        out["compare"] = {"name": compare_name, "counts": compare_counts(compare)}
    out["strings"] = strings.items
    return out


def header_rows(a: Analysis) -> list[list[str]]:
    """The sweep's identity as (label, value) text pairs."""
    return [[label, one_line(value, 200)] for label, value in identity_rows(a.data.meta, a.data.models)]


def headline(a: Analysis) -> dict[str, Any]:
    """The figures at the top of the page: coverage, pass rate, models per outcome."""
    o, c = a.overview, a.coverage
    return {
        "models": o["models"],
        "tested": o["tested"],
        "passed": o["passed"],
        "pass_rate": o["pass_rate"],
        "outcomes": [[CATEGORIES[k], n] for k, n in o["categories"].items()],
        "catalog_share": c["catalog_share"] if c else None,
        "tested_share": c["tested_share"] if c else None,
    }


def fix_next(plan: dict[str, Any]) -> dict[str, Any]:
    """The plan's steps in plan order, each cause in words (``Cause.text``), with where the
    plan starts and how far it can go; reproducers are paths inside the sweep folder."""
    steps = []
    for s in plan["steps"]:
        repros = list(dict.fromkeys(r for r in s.get("repros", []) if r and REPRO_PATH.match(r)))
        steps.append({
            "k": s["step"], "causes": [one_line(c.text(), 500) for c in s["causes"]], "whose": list(s["whose"]),
            "models_freed": _plain(s["models_freed"]), "weight_freed": _plain(s["weight_freed"]),
            "coverage": _plain(s["coverage"]), "repros": repros,
        })  # fmt: skip
    return {
        "weighted": plan["weighted"], "start": _plain(plan["start"]), "ceiling": _plain(plan["ceiling"]),
        "ceiling_models": _plain(plan["ceiling_models"]), "unplanned_models": _plain(plan["unplanned_models"]),
        "max_bundle": lowering_plan.MAX_BUNDLE, "steps": steps,
    }  # fmt: skip


def roadmap_rows(a: Analysis) -> list[list[Any]]:
    """[op, kinds, models blocked, downloads blocked, only blocker of, downloads freed]."""
    cols = ["op", "kinds", "models", "downloads", "unlocked_models", "unlocked_downloads"]
    return [[_plain(v) for v in row] for row in a.ops[cols].itertuples(index=False)]


def finding_rows(frame: pd.DataFrame) -> list[list[Any]]:
    """[kind, subject, whole graph?, graph, models, downloads, sample message, reproducer,
    examples] per lowering-tool finding; an op-less graph failure's subject is
    ``findings.WHOLE_GRAPH``, and every sample is the failure's signature."""
    rows = []
    for r in frame.itertuples(index=False):
        whole = findings.is_whole_graph(r.graph, r.signature)
        subject = findings.WHOLE_GRAPH if whole else r.op
        rows.append([r.kind, subject, whole, r.graph, _plain(r.models), _plain(r.downloads),
                     one_line(findings.sample(r.kind, r.message), 500),
                     r.repro, list(r.examples)])
    return rows


def model_columns(data: SweepData, s: Strings) -> dict[str, Any]:
    """One list per column, in rank order; nested parts flattened to index lists."""
    m = data.models
    ids = m["model_id"].tolist()
    stage_cols = [m[f"stage_{st}"].tolist() for st in data.stages]
    marks = ["".join(STAGE_CODES.get(v, "-") for v in per) for per in zip(*stage_cols)] if stage_cols else [""] * len(m)
    nested = data.nested
    return {
        "id": ids,
        "key": {i: k for i, (k, mid) in enumerate(zip(m["key"].tolist(), ids)) if k != mid},
        "rank": _ints(m["rank"]),
        "downloads": _ints(m["downloads"]),
        "task": s.column(m["pipeline_tag"]),
        "model_type": s.column(m["model_type"]),
        "arch": s.column(m["architecture"]),
        "library": s.column(m["library_name"]),
        "status": s.column(m["status"]),
        "category": s.column(m["category"]),
        "origin": s.column(origins(m)),
        "kind": s.column(m["reason_kind"]),
        "op": s.column(m["reason_op"]),
        "message": s.column(m["reason_message"], lambda v: one_line(v, 2000)),
        "stages": marks,
        # (kind, op, message, origin, stage) per blocker, flattened
        "blockers": [[x for b in blk for x in (s(b[0]), s(b[1]), s(one_line(b[2], 2000)), s(b[3]), s(b[4]))]
                     for blk in nested["blockers"]],
        "fallbacks": {i: [x for op, n in fb for x in (s(op), n)] for i, fb in enumerate(nested["fallback_ops"]) if fb},
        "breaks": {i: [s(r) for r in br] for i, br in enumerate(nested["graph_break_reasons"]) if br},
        "problems": {i: [s(p) for p in pr] for i, pr in enumerate(nested["compile_problems"]) if pr},
        "repro": [s(r.replace(mid, ID_MARK)) if mid else s(r) for r, mid in zip(m["repro"].tolist(), ids)],
        "weights": s.column(m["weights"]),
        "dtype": s.column(m["dtype"]),
        "device": s.column(m["device"]),
        "seconds": [round(v, 2) if v == v else None for v in m["seconds"].tolist()],
        "diff": [None if pd.isna(v) else float(f"{v:.3g}") for v in m["max_abs_diff"].tolist()],
        "shapes": s.column(m["shapes_text"]),
        "generate": s.column(m["generation_text"]),  # each mode's verdict, for models that generate
        # A quantized repo's method, and whether its check ran with it (sparse: few are).
        "quant": {i: s(f"{method} ({'applied' if applied else 'not applied'})")
                  for i, (method, applied) in enumerate(zip(m["quant_method"].tolist(), m["quant_applied"].tolist()))
                  if method},
    }


def change_column(data: SweepData, result: Any, s: Strings) -> list[int]:
    """Per model, what changed against the other sweep: fixed, regressed, new, ..."""
    change = {}
    for name, frame in (("new", result.new), ("changed", result.changed), ("unavailable", result.unavailable),
                        ("fixed", result.fixed), ("regressed", result.regressed)):  # fmt: skip
        change.update(dict.fromkeys(frame["key"].tolist(), name))
    return [s(change.get(k)) for k in data.models["key"].tolist()]


def compare_counts(result: Any) -> dict[str, int]:
    """How many models each kind of change holds."""
    names = ("regressed", "fixed", "new", "gone", "unavailable", "changed")
    return {n: len(getattr(result, n)) for n in names}


def _ints(col: pd.Series) -> list[int | None]:
    return [None if v is pd.NA else int(v) for v in col.tolist()]


def _plain(value: Any) -> Any:
    if value is None or value is pd.NA:
        return None
    return value.item() if hasattr(value, "item") else value
