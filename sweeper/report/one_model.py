"""The report of one model: its record as text, what ``sweep one`` prints."""

from __future__ import annotations

from sweeper.records import ModelRecord


def describe_record(record: ModelRecord) -> str:
    """Stages, reasons, fallbacks, graph breaks and the repro command, one per line."""
    lines = [
        f"model:        {record.model_id}",
        f"architecture: {record.architecture or '?'} ({record.model_type or '?'}, {record.num_parameters or 0:,} parameters)",
        f"device:       {record.device} ({record.weights} weights, {record.dtype})",
        f"status:       {record.status.value.upper()} in {record.seconds:.2f}s",
    ]
    if "images" in record.notes:
        lines.append(f"images:       {record.notes['images']}")
    for name, result in record.stages.items():
        why = f"  {result.reason.kind.value} [{result.reason.origin.value}]: {result.reason.message}" if result.reason else ""
        lines.append(f"  {name:<10} {result.status.value:<8} {result.seconds:7.2f}s{why}")
    lines.extend(_components(record))
    for blocker in record.blockers[1:]:
        op = f" {blocker.op}" if blocker.op else ""
        lines.append(f"also blocked by: {blocker.kind.value}{op} [{blocker.origin.value}, {blocker.stage}]: {blocker.message}")
    if record.control:
        ctl = record.control
        why = f": {ctl['reason']['kind']}: {ctl['reason']['message']}" if ctl.get("reason") else ""
        lines.append(f"cpu control:  {ctl['stage']} {ctl['status']} on the CPU{why}")
    if record.fallback_ops:
        ops = ", ".join(f"{op} x{n}" for op, n in sorted(record.fallback_ops.items()))
        lines.append(f"cpu fallbacks: {ops}")
    if record.graph_breaks:
        lines.append(f"graph breaks: {record.graph_breaks}")
        lines.extend(f"  - {reason}" for reason in record.graph_break_reasons[:10])
    lines.extend(f"compile problem: {p}" for p in record.compile_problems[:10])
    lines.extend(_numerics(record))
    lines.append(f"repro: {record.repro}")
    return "\n".join(lines)


def _numerics(record: ModelRecord) -> list[str]:
    """Device vs CPU per stage (absolute and relative), and a nondeterministic verdict."""
    n = record.numerics or {}
    lines = []
    for stage in ("forward", "backward"):
        d = n.get(stage)
        if isinstance(d, dict):
            where = f", worst {d['where']}" if d.get("where") else ""
            lines.append(f"{stage} |device - cpu|: max {d['max_abs']:.3g} (relative {d['max_rel']:.3g}{where})")
    if not lines and record.max_abs_diff is not None:
        lines.append(f"max |device - cpu|: {record.max_abs_diff:.3g}")
    if isinstance(n.get("nondeterministic"), dict):
        lines.append(f"nondeterministic: two CPU runs differ by {n['nondeterministic']['max_abs']:.3g}; not judged")
    return lines


def _components(record: ModelRecord) -> list[str]:
    """A model of several components (a diffusers pipeline): each one's status and stages."""
    parts = record.notes.get("component_stages")
    if not isinstance(parts, dict):
        return []
    lines = [f"components ({record.notes.get('components_source') or '?'}):"]
    for name, part in parts.items():
        stages = " ".join(f"{stage}={status}" for stage, status in (part.get("stages") or {}).items())
        why = f"  [{part['reason']}]" if part.get("reason") else ""
        lines.append(f"  {name:<14} {part.get('class') or '?'}: {str(part.get('status')).upper()}  {stages}{why}")
    return lines
