"""Read a sweep folder (its records and ``SweepMeta``) into pandas frames.

Each line is read through the record contract (``ModelRecord.from_dict``, which reads
every schema version), then boiled down to an ``Entry``: what the report uses of it.
Records are read leniently: a torn or unparseable line is skipped and counted (the report
says how many), and a key seen twice keeps its last record, as a resumed sweep appends.
Nested parts of a record (blockers, CPU fallbacks, graph breaks, compile problems) become
long tables keyed by ``key`` so that aggregation is plain pandas.
"""

from __future__ import annotations

import contextlib
import gc
import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NamedTuple

import pandas as pd

from sweeper.checks.classify import graph_break_cause
from sweeper.records import STAGE_ORDER, ModelRecord, Reason, ReasonKind, StageResult, Status
from sweeper.redact import env_secrets, redact_obj
from sweeper.report.generation_fields import COLUMNS as GENERATION_COLUMNS
from sweeper.report.generation_fields import generation_columns
from sweeper.report.shape_fields import COLUMNS as SHAPE_COLUMNS
from sweeper.report.shape_fields import shape_columns
from sweeper.settings.errors import UsageError
from sweeper.storage.folder import SweepFolder
from sweeper.storage.sweep_meta import SweepMeta

_STATUSES = {s.value for s in Status}
# The one vocabulary of model outcomes, in report order, with the words report.md,
# summary.json and the charts use. Each model is counted under the outcome its record
# carries (``ModelRecord.outcome``, decided once by ``records.decide_outcome``; records
# written before it existed get it on read): only ``device`` failures enter the device pass rate.
CATEGORIES: dict[str, str] = {
    "pass": "pass",
    "device": "device fail",
    "lowering_tool": "lowering tool",
    "harness": "harness",
    "model": "model",
    "environment": "environment",
    "skip": "skip",
    "nondeterministic": "device nondeterministic",
}
# Outcomes only some sweeps have: counted (and shown) only when a model has one, so that
# the outcome tables of sweeps without one read as before.
OPTIONAL_CATEGORIES = frozenset({"nondeterministic"})
TRIED = ("pass", "device")  # the device pass rate's denominator
MODEL_COLUMNS = [
    "key", "model_id", "rank", "downloads", "pipeline_tag", "library_name", "model_type",
    "architecture", "status", "category", "reason_kind", "reason_op", "reason_message", "reason_origin",
    "blocker_count", "weights", "dtype", "device", "graph_breaks", "seconds", "max_abs_diff", "repro",
    "config_source", "grad_max_rel_diff", "nondeterministic_diff", "reused_from", "fingerprint",
    "numerics_over", "within_noise", "within_precision", "precision", "versions", "quant_method", "quant_applied",
    *SHAPE_COLUMNS, *GENERATION_COLUMNS,
]  # fmt: skip
# Stages only some models have (the generate stage: models that generate): left out of the
# sweep's stages when no record has one, so that a sweep of models that do not generate
# reads as before instead of showing a stage no model could run.
OPTIONAL_STAGES = frozenset({"generate"})


@dataclass
class SweepData:
    """One sweep folder as frames: ``models`` has one row per model, ordered by rank."""

    models: pd.DataFrame
    stages: list[str]
    blockers: pd.DataFrame  # row, key, kind, op, message, origin, stage: every blocker of a non-passing model
    fallbacks: pd.DataFrame  # row, key, op, calls
    breaks: pd.DataFrame  # row, key, reason
    problems: pd.DataFrame  # row, key, problem
    # (``row`` is the model's position in ``models``.)
    meta: SweepMeta = field(default_factory=SweepMeta.missing)
    skipped_lines: int = 0
    # Per model, in ``models`` order: blockers ((kind, op, message) tuples), fallback_ops
    # ((op, calls) tuples), graph_break_reasons and compile_problems: what records.parquet stores.
    nested: dict[str, list] = field(default_factory=dict)

    @property
    def has_downloads(self) -> bool:
        """Whether any model carries a download count (zoo sweeps carry none)."""
        return bool(self.models["downloads"].notna().any())

    def failing_rows(self, long: pd.DataFrame) -> pd.Series:
        """Which rows of a long table belong to models the device fails (device pass-rate failures)."""
        fail = (self.models["category"] == "device").to_numpy()
        return pd.Series(fail[long["row"].to_numpy()], index=long.index, dtype=bool)

    def stage_column(self, stage: str) -> str:
        """The ``models`` column holding one stage's status."""
        return f"stage_{stage}"


def build_keys(models: pd.DataFrame) -> pd.Series:
    """What each model is as a build: models made from their type's default config (the
    zoo, or the Hub unreachable) with the same head class are one build; any other model
    is its own."""
    default = models["config_source"].fillna("").astype(str).str.startswith("default")
    shared = "type:" + models["model_type"].fillna("?").astype(str) + "::" + models["architecture"].fillna("?").astype(str)
    if "quant_method" in models:  # a quantized repo is its method's build, not the float one
        shared = shared + ("::" + models["quant_method"].astype(str)).where(models["quant_method"].notna(), "")
    return shared.where(default, "model:" + models["key"].astype(str))


def read_sweep(out_dir: Path) -> SweepData:
    """Load ``OUT``; raise ``UsageError`` when it is not a sweep folder."""
    folder = SweepFolder(out_dir)
    path = folder.require_records()
    with gc_paused():
        entries, skipped, first_problem = _read_lines(path)
        if skipped and not entries:
            raise UsageError(f"{path} holds no readable records ({first_problem})")
        return build(list(entries.values()), meta=folder.read_meta(), skipped_lines=skipped)


@contextlib.contextmanager
def gc_paused() -> Iterator[None]:
    """Pause the cyclic garbage collector: reading builds millions of long-lived containers
    and repeated collections over them would take most of the time."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


class Entry(NamedTuple):
    """One record boiled down to what reports use. Keeping this instead of the record
    keeps memory small for 100,000-record sweeps."""

    row: tuple  # the ``MODEL_COLUMNS`` values
    stages: dict[str, str]  # stage -> status, as recorded
    died_in: Any  # (stage, status) a worker died in (``notes.stage``, crash/timeout), None when none did
    blockers: list[tuple]  # (kind, op, message, origin, stage) of a non-passing model
    fallbacks: list[tuple]  # (op, calls)
    breaks: list[str]  # graph-break reasons
    problems: list[str]  # compile problems


def _read_lines(path: Path) -> tuple[dict[str, Entry], int, str]:
    """Entries by key (last wins), the count of skipped lines, the first problem."""
    entries: dict[str, Entry] = {}
    skipped, first_problem = 0, ""
    secrets = env_secrets()  # records written before redaction existed are scrubbed here
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
            try:
                entry = entry_of(ModelRecord.from_dict(redact_obj(raw, secrets)))
            except (TypeError, ValueError, AttributeError):  # a field of the wrong shape
                skipped += 1
                first_problem = first_problem or f"line {number} is not a sweep record"
                continue
            key = entry.row[0]
            entries.pop(key, None)  # re-insert so the order follows the last write
            entries[key] = entry
    return entries, skipped, first_problem


def entry_of(record: ModelRecord) -> Entry:
    """The parts of one record that reports use."""
    blockers = []
    if record.status is not Status.PASS:
        blockers = [(b.kind.value, b.op or None, b.message or "", b.origin.value, b.stage) for b in _blockers(record)]
    notes = record.notes or {}
    return Entry(
        row=_model_row(record, notes, blockers),
        stages={name: _stage_status(result) for name, result in record.stages.items()},
        died_in=_died(record, notes),
        blockers=blockers,
        fallbacks=[(str(op), int(calls or 0)) for op, calls in (record.fallback_ops or {}).items()],
        # Causes, not Dynamo's full text: older records kept file names and hints per model.
        breaks=list(dict.fromkeys(graph_break_cause(r) for r in record.graph_break_reasons or [])),
        problems=[str(p) for p in record.compile_problems or []],
    )


def build(entries: list[Entry], *, meta: SweepMeta | None = None, skipped_lines: int = 0) -> SweepData:
    """Frames from entries (see ``entry_of``)."""
    meta = meta or SweepMeta.missing()
    stages = _sweep_stages(entries, meta)
    rows, stage_rows = [], []
    blockers, fallbacks, breaks, problems = [], [], [], []
    nested: dict[str, list] = {"blockers": [], "fallback_ops": [], "graph_break_reasons": [], "compile_problems": []}
    for row, recorded, died_in, blk, fb, br, pr in entries:
        rows.append(row)
        stage_rows.append(_stage_statuses(recorded, died_in, stages))
        key = row[0]
        blockers.extend((key, *b) for b in blk)
        fallbacks.extend((key, *f) for f in fb)
        breaks.extend((key, r) for r in br)
        problems.extend((key, p) for p in pr)
        nested["blockers"].append(blk)  # (kind, op, message, origin, stage) tuples: Arrow reads them as structs
        nested["fallback_ops"].append(fb)
        nested["graph_break_reasons"].append(br)
        nested["compile_problems"].append(pr)
    names = MODEL_COLUMNS + [f"stage_{s}" for s in stages]
    values = [list(col) for col in zip(*(r + s for r, s in zip(rows, stage_rows)))] or [[] for _ in names]
    models = pd.DataFrame({name: _column(name, col) for name, col in zip(names, values)})
    rank = models["rank"]
    if not (rank.notna().all() and rank.is_monotonic_increasing and rank.is_unique):  # usually already in order
        models = models.sort_values(["rank", "key"], na_position="last", kind="stable")
    order = models.index.tolist()
    models = models.reset_index(drop=True)
    models["build"] = build_keys(models)
    row_of = {key: i for i, key in enumerate(models["key"].tolist())}
    return SweepData(
        models=models,
        stages=stages,
        blockers=_frame(blockers, ["key", "kind", "op", "message", "origin", "stage"], row_of),
        fallbacks=_frame(fallbacks, ["key", "op", "calls"], row_of).astype({"calls": "int64"}),
        breaks=_frame(breaks, ["key", "reason"], row_of),
        problems=_frame(problems, ["key", "problem"], row_of),
        meta=meta,
        skipped_lines=skipped_lines,
        nested={name: [lst[i] for i in order] for name, lst in nested.items()},
    )


_TYPES = {"rank": "Int64", "downloads": "Int64", "graph_breaks": "int64", "blocker_count": "int64",
          "seconds": "float64", "max_abs_diff": "float64", "grad_max_rel_diff": "float64",
          "nondeterministic_diff": "float64", "within_noise": "bool", "within_precision": "bool",
          "shapes_workload_compiles": "Int64", "shapes_graphs_per_shape": "Int64",
          "generation_recompiles": "Int64"}  # fmt: skip


def _column(name: str, values: list) -> pd.Series:
    """Numbers typed; text kept as Python objects (fast to build and to iterate)."""
    return pd.Series(values, dtype=_TYPES.get(name, object))


def _frame(rows: list[tuple], columns: list[str], row_of: dict[str, int]) -> pd.DataFrame:
    """A long table, with ``row``: the position of its model in ``models`` (joins on
    integers are much cheaper than on 100,000 string keys)."""
    frame = pd.DataFrame(rows, columns=columns, dtype=object)
    frame.insert(0, "row", pd.Series([row_of[r[0]] for r in rows], dtype="int64"))
    return frame


def _sweep_stages(entries: list[Entry], meta: SweepMeta) -> list[str]:
    """The sweep's stages: from its config, else those seen in records, in run order."""
    configured = meta.stages
    names = set(configured) if configured else {s for e in entries for s in e.stages}
    for optional in OPTIONAL_STAGES & names:
        if not any(optional in e.stages or (e.died_in and e.died_in[0] == optional) for e in entries):
            names.discard(optional)
    order = [s.value for s in STAGE_ORDER]
    return [s for s in order if s in names] + sorted(names - set(order))


_NO_REASON = Reason(ReasonKind.UNKNOWN, "no reason recorded")


def _blockers(record: ModelRecord) -> list[Reason]:
    """Every blocker of a record; the first reason when no list was kept."""
    return record.blockers or [record.reason or _NO_REASON]


def _quantization(found: object) -> tuple[str | None, bool | None]:
    """A quantized repo's method and whether its check ran with it applied (None: plain)."""
    if not isinstance(found, dict) or not found.get("method"):
        return None, None
    return str(found["method"]), found.get("applied") is True


def _model_row(record: ModelRecord, notes: dict, blockers: list[tuple]) -> tuple:
    """The ``MODEL_COLUMNS`` values of one record."""
    reason, status = record.reason, record.status.value
    rank, downloads, diff = record.rank, record.downloads, record.max_abs_diff
    return (
        str(record.key),
        str(record.model_id),
        rank if isinstance(rank, int) else None,
        downloads if isinstance(downloads, int) else None,
        record.pipeline_tag,
        record.library_name,
        record.model_type,
        record.architecture,
        status,
        _outcome(record),
        reason.kind.value if reason else None,
        reason.op or None if reason else None,
        reason.message or "" if reason else "",
        reason.origin.value if reason else None,
        len(blockers),
        record.weights,
        record.dtype,
        record.device or None,
        int(record.graph_breaks or 0),
        float(record.seconds or 0.0),
        diff if isinstance(diff, (int, float)) else None,
        record.repro or "",
        notes.get("config_source"),
        _figure(record, "backward", "max_rel"),
        _figure(record, "nondeterministic", "max_abs"),
        record.reused_from or None,
        # Records without a fingerprint (older sweeps, test checks) are each their own check.
        str(notes.get("fingerprint") or record.key),
        _part(record, "over").get("tensor"),  # output | gradient: what went past the tolerance
        _part(record, "within_noise").get("within") is True,
        _within_precision(record),
        _precision(record),
        versions_text(record.versions),
        *_quantization(record.quantization),
        *shape_columns(record.shapes),
        *generation_columns(record.generation, [b for b in blockers if b[4] == "generate"]),
    )


def versions_text(versions: object) -> str | None:
    """A record's versions in one sortable string (``timm 1.0.15; torch 2.13.0+cpu``)."""
    if not isinstance(versions, dict) or not versions:
        return None
    return "; ".join(f"{k} {v}" for k, v in sorted(versions.items()))


def _within_precision(record: ModelRecord) -> bool:
    """Whether a gap past the tolerance was within the device's declared float32 math (on
    the model or one of its components)."""
    tables = [record.numerics] if isinstance(record.numerics, dict) else []
    components = tables[0].get("components") if tables else None
    if isinstance(components, dict):
        tables += [t for t in components.values() if isinstance(t, dict)]
    return any(isinstance(t.get("within_precision"), dict) and t["within_precision"].get("within") is True
               for t in tables)


def _precision(record: ModelRecord) -> str | None:
    """The float32 math the record's stages ran under, as one phrase (None when unknown)."""
    from sweeper.devices.precision import Float32Math

    if not isinstance(record.precision, dict) or not record.precision:
        return None
    try:
        return Float32Math.from_dict(record.precision).describe()
    except ValueError:
        return None


def _outcome(record: ModelRecord) -> str:
    """The record's own outcome (one of ``CATEGORIES``); never re-derived here."""
    return (record.outcome or record.settle().outcome).value  # type: ignore[union-attr]


def _died(record: ModelRecord, notes: dict) -> tuple[str, str] | None:
    """(stage, how) of a worker that died mid-stage: crash, timeout or oom, from its record."""
    if not notes.get("stage"):
        return None
    oom = record.reason is not None and record.reason.kind is ReasonKind.OOM
    return str(notes["stage"]), "oom" if oom else record.status.value


def _stage_status(result: StageResult) -> str:
    """A stage's status as the stage table counts it: a failure for want of memory reads
    ``oom``, apart from other failures (as crashes and timeouts already are)."""
    status = result.status.value
    if status in ("fail", "crash") and result.reason is not None and result.reason.kind is ReasonKind.OOM:
        return "oom"
    return status


def _part(record: ModelRecord, part: str) -> dict:
    """One table of the record's ``numerics`` (e.g. ``over``), empty when absent."""
    numerics = record.numerics
    entry = numerics.get(part) if isinstance(numerics, dict) else None
    return entry if isinstance(entry, dict) else {}


def _figure(record: ModelRecord, part: str, name: str) -> float | None:
    """One number of the record's ``numerics`` (e.g. backward max_rel), None when absent."""
    value = _part(record, part).get(name)
    return value if isinstance(value, (int, float)) else None


def _stage_statuses(recorded: dict[str, str], died: Any, stages: list[str]) -> tuple[str | None, ...]:
    """Each stage's status. A worker that died mid-stage (``notes.stage``) left only that
    stage, if any: it reads as the model's crash, timeout or oom (else ``fail``), the stages
    before it ``pass`` (a stage runs only after those before it did) and the later ones ``blocked``."""
    if died is None:
        return tuple(recorded.get(stage) for stage in stages)
    died_in, how = died
    how = how if how in ("crash", "timeout", "oom") else "fail"
    if died_in not in stages:
        return tuple(recorded.get(stage) for stage in stages)
    at = stages.index(died_in)
    # A stage only some models have is not filled in: unrecorded, the model may not have it.
    fill = [None if s in OPTIONAL_STAGES else "pass" for s in stages[:at]] + [how] + \
        [None if s in OPTIONAL_STAGES else "blocked" for s in stages[at + 1:]]
    return tuple(recorded.get(stage) or filled for stage, filled in zip(stages, fill))
