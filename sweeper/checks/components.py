"""A model of several components (a diffusers pipeline): each component's own record,
summed into the model's one record.

Each component runs every selected stage on its own (its own CPU reference, its own CPU
control). The model's record then holds, per stage, the worst of its components (a
failure names the component: ``vae: ...``), every component's blockers so named, their
fallbacks, graph breaks and numerics together, and the structured note
``component_stages``: per component its class, status, stages and first reason. The
outcome is decided once, over all of them: the model passes only when every component
passes every stage.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from sweeper.records import ModelRecord, Reason, StageResult, Status, kind_info

# Worst first: a stage is what its worst component made of it.
_ORDER = (Status.CRASH, Status.TIMEOUT, Status.ERROR, Status.FAIL, Status.BLOCKED, Status.SKIP, Status.PASS)


def named(component: str, reason: Reason) -> Reason:
    """``reason`` with the component it belongs to leading its message (``vae: ...``)."""
    if reason.message.startswith(f"{component}: "):
        return reason
    return dataclasses.replace(reason, message=f"{component}: {reason.message}")


def merge(record: ModelRecord, parts: dict[str, ModelRecord], *, classes: dict[str, str]) -> None:
    """Fold each component's record (``parts``, by name) into ``record`` and settle it."""
    for name, sub in parts.items():
        for stage, result in sub.stages.items():
            record.stages[stage] = _worse(record.stages.get(stage), result, name)
        for reason in sub.blockers:
            if (found := named(name, reason)) not in record.blockers:
                record.blockers.append(found)
        for op, count in sub.fallback_ops.items():
            record.fallback_ops[op] = record.fallback_ops.get(op, 0) + count
        record.compile_problems.extend(f"{name}: {p}" for p in sub.compile_problems if f"{name}: {p}" not in record.compile_problems)
        record.graph_breaks += sub.graph_breaks
        for stage, phases in sub.compile_phases.items():  # the model's compiles are its components'
            into = record.compile_phases.setdefault(stage, {})
            for phase, seconds in phases.items():
                into[phase] = round(into.get(phase, 0.0) + seconds, 3)
        record.graph_break_reasons.extend(r for r in sub.graph_break_reasons if r not in record.graph_break_reasons)
        if sub.control is not None and record.control is None:
            record.control = {**sub.control, "component": name}
    diffs = [s.max_abs_diff for s in parts.values() if s.max_abs_diff is not None]
    record.max_abs_diff = max(diffs) if diffs else None
    peaks = [s.peak_memory_bytes for s in parts.values() if s.peak_memory_bytes is not None]
    record.peak_memory_bytes = max(peaks, default=record.peak_memory_bytes)  # taken after the stages, not the build
    record.numerics = _numerics(parts)
    record.shapes = _shapes(parts)
    record.notes["component_stages"] = {name: _summary(sub, classes.get(name)) for name, sub in parts.items()}
    record.reason = record.blockers[0] if record.blockers else None
    record.status = Status.PASS if record.reason is None else kind_info(record.reason.kind).status
    record.settle()


def _worse(current: StageResult | None, result: StageResult, name: str) -> StageResult:
    """The stage as the model has it: the worse of ``current`` and the component's result
    (seconds add up; a failing component's reason is named)."""
    reason = named(name, result.reason) if result.reason is not None else None
    mine = dataclasses.replace(result, reason=reason)
    if current is None:
        return mine
    seconds = current.seconds + result.seconds
    worst = current if _ORDER.index(current.status) <= _ORDER.index(result.status) else mine
    return dataclasses.replace(worst, seconds=seconds)


def _numerics(parts: dict[str, ModelRecord]) -> dict[str, Any]:
    """The numerics of the component that went past its tolerance (else the one furthest
    from the CPU), as the report reads them, with every component's under ``components``."""
    tables = {name: sub.numerics for name, sub in parts.items() if sub.numerics}
    if not tables:
        return {}
    over = [name for name, t in tables.items() if "over" in t]
    worst = over[0] if over else max(tables, key=lambda n: parts[n].max_abs_diff or 0.0)
    return {**tables[worst], "component": worst, "components": tables}


# A model's shapes verdict is its worst component's: one failing shape fails it, one
# component that recompiles per shape makes a workload recompile.
_VERDICTS = ("fails", "timeout", "static", "symbolic", "not_run")


def _shapes(parts: dict[str, ModelRecord]) -> dict[str, Any]:
    """The shapes findings of a model of several components: the worst component's verdict,
    the compiles a workload costs summed over them, every component's under ``components``."""
    tables = {name: sub.shapes for name, sub in parts.items() if sub.shapes}
    if not tables:
        return {}
    verdicts = [t.get("verdict") for t in tables.values() if t.get("verdict") in _VERDICTS]
    worst = min(verdicts, key=_VERDICTS.index) if verdicts else None
    out: dict[str, Any] = {"verdict": worst, "components": tables}
    for key in ("compiles", "recompiles", "workload_compiles"):
        values = [t[key] for t in tables.values() if isinstance(t.get(key), int)]
        if values:
            out[key] = sum(values)
    lengths = {t.get("workload_lengths") for t in tables.values()} - {None}
    if lengths:
        out["workload_lengths"] = max(lengths)
    failing = next((t for t in tables.values() if t.get("verdict") == "fails"), None)
    if failing is not None and "failed_at" in failing:
        out["failed_at"] = failing["failed_at"]
    return out


def _summary(sub: ModelRecord, cls: str | None) -> dict[str, Any]:
    """One component as the record lists it (plain JSON values)."""
    reason = sub.reason
    return {
        "class": cls or sub.architecture,
        "status": sub.status.value,
        "stages": {stage: result.status.value for stage, result in sub.stages.items()},
        "reason": None if reason is None else " ".join(x for x in (reason.kind.value, reason.op or "") if x),
        "num_parameters": sub.num_parameters,
    }
