"""Build sweep folders from real ``ModelRecord`` objects for report tests."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from sweeper.records import ModelRecord, Reason, ReasonKind, Stage, StageResult, Status

STAGES = [s.value for s in Stage]


def reason(kind: str, op: str | None = None, message: str = "") -> Reason:
    """A Reason from plain strings."""
    return Reason(kind=ReasonKind(kind), op=op, message=message or f"{kind} {op or ''}".strip())


def record(
    model_id: str,
    rank: int,
    downloads: int | None,
    status: str = "pass",
    *,
    fail_at: str | None = None,
    blockers: list[Reason] | None = None,
    task: str | None = "fill-mask",
    model_type: str | None = "bert",
    stages: list[str] | None = None,
    **extra: Any,
) -> ModelRecord:
    """A record; ``fail_at`` fails that stage with the first blocker and blocks the rest.
    The generate stage is there only for a record with ``generation`` findings or failing
    it, as a sweep leaves it out for models that do not generate."""
    names = stages or [s for s in STAGES if s != "generate" or extra.get("generation") or fail_at == "generate"]
    blockers = blockers or []
    first = blockers[0] if blockers else None
    results: dict[str, StageResult] = {}
    if status in ("pass", "fail"):
        state = Status.PASS
        for name in names:
            if name == fail_at:
                results[name] = StageResult(Status.FAIL, 0.1, first)
                state = Status.BLOCKED
            else:
                results[name] = StageResult(state, 0.1)
    return ModelRecord(
        sweep_id="s1",
        model_id=model_id,
        key=model_id,
        device="trnsim",
        status=Status(status),
        rank=rank,
        downloads=downloads,
        pipeline_tag=task,
        model_type=model_type,
        library_name="transformers",
        stages=results,
        reason=first,
        blockers=blockers,
        repro=f"sweep one {model_id} --device trnsim --weights tiny",
        **extra,
    )


def meta(**overrides: Any) -> dict[str, Any]:
    """A sweep.json as the driver writes it."""
    data: dict[str, Any] = {
        "sweep_id": "20250321-trnsim-abc123",
        "config": {"device": "trnsim", "weights": "tiny", "dtype": "float32", "stages": STAGES, "collect_all": True},
        "source": {"name": "catalog", "path": "hub-top1000.csv", "snapshot_date": "2025-03-21"},
        "device": {"spec": "trnsim", "profile": {"name": "trnsim-2026.08", "hash": "9f3c2a1b"}},
        "versions": {"torch": "2.13.0", "transformers": "5.24.0", "sweeper": "0.1.0"},
        "started": "2025-03-22T10:00:00+00:00",
        "ended": "2025-03-22T10:42:00+00:00",
        "wall_seconds": 2520.0,
        "total": 0,
    }
    data.update(overrides)
    return data


def write_sweep(folder: Path, records: list[ModelRecord], sweep: dict[str, Any] | None = None) -> Path:
    """Write records.jsonl (and sweep.json unless ``sweep`` is empty) into ``folder``."""
    folder.mkdir(parents=True, exist_ok=True)
    lines = "".join(r.to_json() + "\n" for r in records)
    (folder / "records.jsonl").write_text(lines, encoding="utf-8")
    if sweep != {}:
        (folder / "sweep.json").write_text(json.dumps(sweep or meta(total=len(records))), encoding="utf-8")
    return folder
