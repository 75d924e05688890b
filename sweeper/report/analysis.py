"""Everything a report shows, computed once: frames for Markdown, a dict for summary.json."""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from sweeper.report import aggregate, cause_tables, formats, generation, lowering_plan, roadmap, shapes
from sweeper.report.load import SweepData
from sweeper.report.numerics import numerics

TOP_ITEMS = 50  # rows of each ranked table kept in summary.json


@dataclass
class Analysis:
    """The aggregated view of one sweep."""

    data: SweepData
    overview: dict[str, Any]
    coverage: dict[str, Any] | None
    stages: pd.DataFrame
    not_tested: pd.DataFrame
    reasons: pd.DataFrame
    ops: pd.DataFrame
    features: pd.DataFrame
    lowering_tool: pd.DataFrame
    harness: pd.DataFrame
    model: pd.DataFrame
    builds: dict[str, Any]
    op_models: dict[str, tuple[pd.DataFrame, int]]
    plan: dict[str, Any]
    fallbacks: pd.DataFrame
    breaks: pd.DataFrame
    problems: pd.DataFrame
    by_model_type: pd.DataFrame
    by_task: pd.DataFrame
    numerics: dict[str, Any]
    by_library: pd.DataFrame
    formats: pd.DataFrame  # models in formats that are not PyTorch, per format
    shapes: shapes.ShapesView | None = None  # None: the sweep did not run the shapes stage
    generation: generation.GenerationView | None = None  # None: no model generates
    tool_causes: pd.DataFrame | None = None  # lowering-tool bugs by diagnostic (cause_tables.cause_frame)
    gap_causes: pd.DataFrame | None = None  # dtypes and features the device lacks
    folder: Path | None = None  # the sweep folder (its reproducers), when the report is written from one
    against: str | None = None  # the section comparing this sweep with another dtype's (``--against``)

    @property
    def weighted(self) -> bool:
        """Whether download counts exist, so weighted figures are shown."""
        return self.coverage is not None


def analyse(data: SweepData, folder: Path | None = None) -> Analysis:
    """Run every aggregation over one sweep (``folder``: where its reproducers lie)."""
    ops = roadmap.op_ranking(data)
    return Analysis(
        data=data,
        overview={**aggregate.overview(data), "harness_models": aggregate.models_with(data, "harness")},
        coverage=aggregate.coverage(data),
        stages=aggregate.stage_summary(data),
        not_tested=aggregate.not_tested(data),
        reasons=aggregate.top_reasons(data, limit=100),
        ops=ops,
        features=roadmap.feature_ranking(data),
        lowering_tool=aggregate.blockers_of(data, "lowering_tool", limit=100),
        harness=aggregate.blockers_of(data, "harness", limit=100),
        model=aggregate.blockers_of(data, "model", limit=100),
        builds=aggregate.builds(data),
        op_models=roadmap.models_per_op(data, list(ops["op"].head(roadmap.OPS_WITH_MODELS))),
        plan=lowering_plan.plan(data),
        fallbacks=aggregate.fallback_table(data),
        breaks=aggregate.graph_break_table(data),
        problems=aggregate.compile_problem_table(data),
        by_model_type=aggregate.breakdown(data, "model_type"),
        by_task=aggregate.breakdown(data, "pipeline_tag"),
        numerics=numerics(data),
        by_library=aggregate.breakdown(data, "library_name"),
        formats=formats.table_of(data),
        shapes=shapes.shapes_view(data),
        generation=generation.generation_view(data),
        tool_causes=cause_tables.cause_frame(data, folder, ("tool",)),
        gap_causes=cause_tables.cause_frame(data, folder, ("dtype", "feature")),
        folder=folder,
    )


def _plain(value: Any) -> Any:
    """JSON-ready scalars: numpy numbers to Python, NaN/NA to None."""
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if value is None or value is pd.NA:
        return None
    if hasattr(value, "item"):
        value = value.item()
    if isinstance(value, float) and math.isnan(value):
        return None
    return value


def records(frame: pd.DataFrame, limit: int | None = TOP_ITEMS) -> list[dict[str, Any]]:
    """A frame's first rows as plain dicts."""
    part = frame if limit is None else frame.head(limit)
    return [{k: _plain(v) for k, v in row.items()} for row in part.to_dict(orient="records")]


def summary(a: Analysis) -> dict[str, Any]:
    """The machine-readable summary written to summary.json."""
    meta = a.data.meta
    return {
        "sweep_id": meta.sweep_id,
        "device": meta.device,
        "source": meta.source,
        "config": meta.config,
        "versions": meta.versions,
        "started": meta.started,
        "ended": meta.ended,
        "wall_seconds": meta.wall_seconds,
        "skipped_lines": a.data.skipped_lines,
        "checks": checks_line(a.overview),
        "overview": {k: _plain(v) for k, v in a.overview.items()},
        "coverage": a.coverage,
        "stages": records(a.stages, None),
        "not_tested": records(a.not_tested, None),
        "builds": a.builds,
        "top_reasons": records(a.reasons),
        "harness_failures": records(a.harness),
        "model_failures": records(a.model),
        # Ranked by the downloads each op blocks, not the fix order (that is ``fix_next``).
        "ops_by_blocked_downloads": {
            "ops": records(a.ops),
            "features": records(a.features),
            "models_per_op": {
                op: {"models": total, "top": records(frame, None)} for op, (frame, total) in a.op_models.items()
            },
        },
        "fix_next": plan_summary(a.plan),
        "root_causes": {
            "lowering_tool": cause_tables.summary_rows(a.tool_causes) if a.tool_causes is not None else [],
            "dtypes_and_features": cause_tables.summary_rows(a.gap_causes) if a.gap_causes is not None else [],
        },
        "shapes": shapes.summary(a.shapes),
        "generation": generation.summary(a.generation),
        "fallback_ops": records(a.fallbacks),
        "graph_breaks": records(a.breaks),
        "compile_problems": records(a.problems),
        "by_model_type": records(a.by_model_type),
        "by_pipeline_tag": records(a.by_task),
        "by_library": records(a.by_library),
        "not_pytorch_formats": records(a.formats),
        "numerics": {
            **{k: _plain(v) for k, v in a.numerics.items() if not isinstance(v, pd.DataFrame)},
            "buckets": records(a.numerics["buckets"], None),
            "largest": records(a.numerics["worst"], None),
            "nondeterministic": records(a.numerics["nondeterministic"], None),
        },
    }


def plan_summary(plan: dict[str, Any]) -> dict[str, Any]:
    """The plan as summary.json keeps it: each step's causes in words, with kind and whose."""
    steps = [{**{k: v for k, v in s.items() if k != "causes"},
              "causes": [{"cause": c.text(), "kind": c.kind, "name": c.name, "signature": c.signature,
                          "whose": c.whose} for c in s["causes"]]} for s in plan["steps"]]
    return {**plan, "steps": steps}


def checks_line(overview: dict[str, Any]) -> str:
    """``1,000 models, 281 distinct checks``: how much work the sweep really had."""
    return f"{overview['models']:,} models, {overview['distinct_checks']:,} distinct checks"
