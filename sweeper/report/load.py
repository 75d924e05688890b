"""Read a sweep folder (``records.jsonl`` + ``sweep.json``) into pandas frames.

Records are read leniently: a torn or unparseable line is skipped and counted (the report
says how many), and a key seen twice keeps its last record, as a resumed sweep appends.
Nested parts of a record (blockers, CPU fallbacks, graph breaks, compile problems) become
long tables keyed by ``key`` so that aggregation is plain pandas.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from sweeper.errors import UsageError
from sweeper.records import ENVIRONMENT_KINDS, STAGE_ORDER, Status

RECORDS_FILE = "records.jsonl"
SWEEP_FILE = "sweep.json"
_STATUSES = {s.value for s in Status}
_ENV = {k.value for k in ENVIRONMENT_KINDS}
MODEL_COLUMNS = [
    "key", "model_id", "rank", "downloads", "pipeline_tag", "library_name", "model_type",
    "architecture", "status", "category", "reason_kind", "reason_op", "reason_message",
    "blocker_count", "weights", "dtype", "device", "graph_breaks", "seconds", "max_abs_diff", "repro",
]  # fmt: skip


@dataclass
class SweepData:
    """One sweep folder as frames: ``models`` has one row per model, ordered by rank."""

    models: pd.DataFrame
    stages: list[str]
    blockers: pd.DataFrame  # key, kind, op, message: every blocker of a non-passing model
    fallbacks: pd.DataFrame  # key, op, calls
    breaks: pd.DataFrame  # key, reason
    problems: pd.DataFrame  # key, problem
    meta: dict[str, Any] = field(default_factory=dict)
    skipped_lines: int = 0

    @property
    def has_downloads(self) -> bool:
        """Whether any model carries a download count (zoo sweeps carry none)."""
        return bool(self.models["downloads"].notna().any())

    def stage_column(self, stage: str) -> str:
        """The ``models`` column holding one stage's status."""
        return f"stage_{stage}"


def category(status: str, reason_kind: str | None) -> str:
    """pass | fail | environment | skip: environment and skip stay out of device rates."""
    if status == "pass":
        return "pass"
    if reason_kind in _ENV:
        return "environment"
    if status == "skip":
        return "skip"
    return "fail"


def read_sweep(out_dir: Path) -> SweepData:
    """Load ``OUT``; raise ``UsageError`` when it is not a sweep folder."""
    out_dir = Path(out_dir)
    if not out_dir.is_dir():
        raise UsageError(f"not a sweep folder: {out_dir} does not exist or is not a directory")
    path = out_dir / RECORDS_FILE
    if not path.is_file():
        raise UsageError(f"no {RECORDS_FILE} in {out_dir}: is it a sweep output folder?")
    raws, skipped, first_problem = _read_lines(path)
    if skipped and not raws:
        raise UsageError(f"{path} holds no readable records ({first_problem})")
    meta = read_meta(out_dir)
    return build(list(raws.values()), meta=meta, skipped_lines=skipped)


def read_meta(out_dir: Path) -> dict[str, Any]:
    """``sweep.json`` as a dict; empty when absent (any key may be missing)."""
    path = Path(out_dir) / SWEEP_FILE
    if not path.is_file():
        return {}
    try:
        meta = json.loads(path.read_text(encoding="utf-8"))
    except ValueError as exc:
        raise UsageError(f"{path} is not valid JSON: {exc}") from None
    return meta if isinstance(meta, dict) else {}


def _read_lines(path: Path) -> tuple[dict[str, dict], int, str]:
    """Parsed records by key (last wins), the count of skipped lines, the first problem."""
    raws: dict[str, dict] = {}
    skipped, first_problem = 0, ""
    with open(path, encoding="utf-8", errors="replace") as fh:
        for number, line in enumerate(fh, 1):
            if not line.strip():
                continue
            problem = ""
            try:
                raw = json.loads(line)
                if not isinstance(raw, dict) or raw.get("status") not in _STATUSES or not raw.get("model_id"):
                    problem = f"line {number} is not a sweep record"
            except ValueError:
                problem = f"line {number} is not JSON"
            if problem:
                skipped += 1
                first_problem = first_problem or problem
                continue
            key = str(raw.get("key") or raw["model_id"])
            raws.pop(key, None)  # re-insert so file order follows the last write
            raws[key] = raw
    return raws, skipped, first_problem


def build(raws: list[dict], *, meta: dict[str, Any] | None = None, skipped_lines: int = 0) -> SweepData:
    """Frames from record dicts (``ModelRecord.to_dict`` shape)."""
    meta = meta or {}
    stages = _sweep_stages(raws, meta)
    rows, blockers, fallbacks, breaks, problems = [], [], [], [], []
    for raw in raws:
        row = _model_row(raw, stages)
        rows.append(row)
        key = row["key"]
        if row["status"] != "pass":
            found = _blockers(raw)
            row["blocker_count"] = len(found)
            for b in found:
                blockers.append((key, b.get("kind") or "unknown", b.get("op"), b.get("message") or ""))
        for op, calls in (raw.get("fallback_ops") or {}).items():
            fallbacks.append((key, str(op), int(calls or 0)))
        breaks.extend((key, str(r)) for r in raw.get("graph_break_reasons") or [])
        problems.extend((key, str(p)) for p in raw.get("compile_problems") or [])
    models = pd.DataFrame(rows, columns=MODEL_COLUMNS + [f"stage_{s}" for s in stages])
    models["downloads"] = models["downloads"].astype("Int64")
    models["rank"] = models["rank"].astype("Int64")
    models = models.sort_values(["rank", "key"], na_position="last", kind="stable").reset_index(drop=True)
    return SweepData(
        models=models,
        stages=stages,
        blockers=pd.DataFrame(blockers, columns=["key", "kind", "op", "message"]),
        fallbacks=pd.DataFrame(fallbacks, columns=["key", "op", "calls"]),
        breaks=pd.DataFrame(breaks, columns=["key", "reason"]),
        problems=pd.DataFrame(problems, columns=["key", "problem"]),
        meta=meta,
        skipped_lines=skipped_lines,
    )


def _sweep_stages(raws: list[dict], meta: dict[str, Any]) -> list[str]:
    """The sweep's stages: from its config, else those seen in records, in run order."""
    configured = (meta.get("config") or {}).get("stages")
    names = set(configured) if configured else {s for r in raws for s in (r.get("stages") or {})}
    order = [s.value for s in STAGE_ORDER]
    return [s for s in order if s in names] + sorted(names - set(order))


def _blockers(raw: dict) -> list[dict]:
    """Every blocker of a record; the first reason when no list was kept."""
    found = [b for b in raw.get("blockers") or [] if isinstance(b, dict)]
    if found:
        return found
    reason = raw.get("reason")
    return [reason] if isinstance(reason, dict) else [{"kind": "unknown", "message": "no reason recorded"}]


def _model_row(raw: dict, stages: list[str]) -> dict[str, Any]:
    reason = raw.get("reason") if isinstance(raw.get("reason"), dict) else {}
    status = raw["status"]
    kind = reason.get("kind")
    downloads = raw.get("downloads")
    row = {
        "key": str(raw.get("key") or raw["model_id"]),
        "model_id": str(raw["model_id"]),
        "rank": raw.get("rank") if isinstance(raw.get("rank"), int) else None,
        "downloads": downloads if isinstance(downloads, int) else None,
        "pipeline_tag": raw.get("pipeline_tag"),
        "library_name": raw.get("library_name"),
        "model_type": raw.get("model_type"),
        "architecture": raw.get("architecture"),
        "status": status,
        "category": category(status, kind),
        "reason_kind": kind,
        "reason_op": reason.get("op"),
        "reason_message": reason.get("message") or "",
        "blocker_count": 0,
        "weights": raw.get("weights"),
        "dtype": raw.get("dtype"),
        "device": raw.get("device"),
        "graph_breaks": int(raw.get("graph_breaks") or 0),
        "seconds": float(raw.get("seconds") or 0.0),
        "max_abs_diff": raw.get("max_abs_diff"),
        "repro": raw.get("repro") or "",
    }
    row.update(_stage_statuses(raw, stages))
    return row


def _stage_statuses(raw: dict, stages: list[str]) -> dict[str, str | None]:
    """Each stage's status; a worker that died mid-stage (``notes.stage``) left none, so
    that stage reads ``fail`` and the later ones ``blocked``."""
    recorded = raw.get("stages") or {}
    died_in = (raw.get("notes") or {}).get("stage")
    out: dict[str, str | None] = {}
    after_death = False
    for stage in stages:
        entry = recorded.get(stage)
        status = entry.get("status") if isinstance(entry, dict) else None
        if status is None and died_in is not None:
            if stage == died_in:
                status, after_death = "fail", True
            elif after_death:
                status = "blocked"
        out[f"stage_{stage}"] = status
    return out
