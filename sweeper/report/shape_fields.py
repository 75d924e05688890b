"""The shapes stage's findings of one record as the report's model columns.

``checks.shapes`` writes ``record.shapes``; the report keeps of it the verdict, the
compiles a workload of varying lengths costs, the graphs one shape compiles, where the
model failed, the padding check's outcome and one line that says it all (the page's).
"""

from __future__ import annotations

from typing import Any

COLUMNS = ["shapes_verdict", "shapes_workload_compiles", "shapes_graphs_per_shape", "shapes_failed_at",
           "padding_status", "padding_origin", "padding_output", "shapes_text"]
VERDICT_WORDS = {
    "symbolic": "one symbolic graph serves every shape",
    "static": "recompiles for each new shape",
    "fails": "fails at a shape",
    "timeout": "ran out of the stage's time (--shapes-timeout)",
    "not_run": "not run",
}


def shape_columns(shapes: dict[str, Any] | None) -> tuple:
    """The ``COLUMNS`` values of one record's ``shapes`` (Nones for a record without)."""
    if not isinstance(shapes, dict) or not shapes:
        return (None,) * len(COLUMNS)
    verdict = shapes.get("verdict") if isinstance(shapes.get("verdict"), str) else None
    workload = shapes.get("workload_compiles")
    lengths = shapes.get("workload_lengths") or 8
    per_shape = workload // lengths if isinstance(workload, int) and verdict == "static" and lengths else None
    failed = (shapes.get("failed_at") or {}).get("shape") if isinstance(shapes.get("failed_at"), dict) else None
    padding = _padding(shapes)
    return (verdict, workload if isinstance(workload, int) else None, per_shape, failed,
            padding.get("status"), padding.get("origin"), padding.get("output"), describe(shapes))


def _padding(shapes: dict[str, Any]) -> dict[str, Any]:
    """A model's padding finding; of a model of several components, the first that failed
    (else the first checked)."""
    parts = shapes.get("components")
    if isinstance(parts, dict):
        found = [p.get("padding") for p in parts.values() if isinstance(p, dict) and isinstance(p.get("padding"), dict)]
        return next((p for p in found if p.get("status") == "fail"), found[0] if found else {})
    padding = shapes.get("padding")
    return padding if isinstance(padding, dict) else {}


def describe(shapes: dict[str, Any]) -> str:
    """One line: the verdict, the workload's compiles, each recompile's guard, padding."""
    verdict = shapes.get("verdict")
    parts = [VERDICT_WORDS.get(verdict, str(verdict or "no verdict"))]
    lengths = shapes.get("workload_lengths") or 8
    if isinstance(shapes.get("workload_compiles"), int):
        parts.append(f"{shapes['workload_compiles']} compiles for {lengths} lengths")
    for key, words in (("failed_at", "failed"), ("stopped_at", "stopped")):
        at = shapes.get(key)
        if isinstance(at, dict):
            sizes = ", ".join(f"{k} {'x'.join(map(str, v))}" for k, v in (at.get("sizes") or {}).items())
            parts.append(f"{words} at the {at.get('shape')} shape ({sizes})")
    guards = [f"{r.get('input')} dim {r.get('dim')} {r.get('expected')}→{r.get('actual')}"
              for s in shapes.get("shapes") or [] for r in (s.get("recompiles") or [])[:1] if r.get("input")]
    if guards:
        parts.append("recompiled on " + "; ".join(guards))
    symbolic = shapes.get("symbolic") or {}
    if symbolic.get("status") == "reused":
        parts.append(f"a third size reused the graph the {symbolic.get('second')} size recompiled symbolic")
    if symbolic.get("status") == "refused":
        parts.append(f"dynamic=True refused: {symbolic.get('kind')} {symbolic.get('op') or ''}".strip())
    padding = _padding(shapes)
    if padding.get("status") in ("pass", "fail"):
        whose = f" ({padding['origin']}'s)" if padding.get("status") == "fail" and padding.get("origin") else ""
        parts.append(f"padding to {padding.get('bucket')}: {padding['status']}{whose}")
    return "; ".join(parts)
