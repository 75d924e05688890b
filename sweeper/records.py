"""Typed records: the contract between check, store and report.

A ``ModelRef`` names one model to try; a ``ModelRecord`` is what trying it on one device
in one sweep produced. Records serialise to one JSON object per line and back without
loss (``to_json`` / ``from_json``), carrying ``schema_version`` so readers can tell
versions apart.
"""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass, field
from enum import Enum
from typing import Any

SCHEMA_VERSION = 1


class Stage(str, Enum):
    """The stages of one model's check, in the order they run."""

    LOAD = "load"
    TO_DEVICE = "to_device"
    FORWARD = "forward"
    BACKWARD = "backward"
    COMPILE = "compile"


STAGE_ORDER: tuple[Stage, ...] = tuple(Stage)


class Status(str, Enum):
    """Outcome of a model (or of one stage; ``blocked`` is only for stages)."""

    PASS = "pass"
    FAIL = "fail"
    SKIP = "skip"
    TIMEOUT = "timeout"
    CRASH = "crash"
    ERROR = "error"
    BLOCKED = "blocked"


class ReasonKind(str, Enum):
    """Closed set of reasons a stage or a model did not pass."""

    UNSUPPORTED_OP = "unsupported_op"
    UNSUPPORTED_DTYPE = "unsupported_dtype"
    UNSUPPORTED_FEATURE = "unsupported_feature"
    DYNAMIC_SHAPE = "dynamic_shape"
    COMPILE_ERROR = "compile_error"
    GRAPH_BREAK = "graph_break"
    NUMERICS = "numerics"
    UNTIED_WEIGHTS = "untied_weights"
    NO_GRADIENT = "no_gradient"
    OOM = "oom"
    TIMEOUT = "timeout"
    CRASH = "crash"
    REMOTE_CODE = "remote_code"
    GATED = "gated"
    UNSUPPORTED_LIBRARY = "unsupported_library"
    MISSING_DEPENDENCY = "missing_dependency"
    DOWNLOAD = "download"
    INPUT_SYNTHESIS = "input_synthesis"
    CONFIG_ERROR = "config_error"
    TOO_LARGE = "too_large"
    MODEL_ERROR = "model_error"
    HARNESS = "harness"
    UNKNOWN = "unknown"


# Outcomes of the environment (access, packaging, network, a config the installed
# transformers cannot build), not of the device: the device was never tried. Reports show
# them apart and keep them out of the device pass-rate denominator.
ENVIRONMENT_KINDS: frozenset[ReasonKind] = frozenset(
    {
        ReasonKind.GATED,
        ReasonKind.UNSUPPORTED_LIBRARY,
        ReasonKind.REMOTE_CODE,
        ReasonKind.DOWNLOAD,
        ReasonKind.MISSING_DEPENDENCY,
        ReasonKind.CONFIG_ERROR,
        ReasonKind.TOO_LARGE,
    }
)

# Reasons that say the device (or its compiler) is to blame.
DEVICE_KINDS: frozenset[ReasonKind] = frozenset(
    {
        ReasonKind.UNSUPPORTED_OP,
        ReasonKind.UNSUPPORTED_DTYPE,
        ReasonKind.UNSUPPORTED_FEATURE,
        ReasonKind.DYNAMIC_SHAPE,
        ReasonKind.COMPILE_ERROR,
        ReasonKind.GRAPH_BREAK,
        ReasonKind.NUMERICS,
        ReasonKind.UNTIED_WEIGHTS,
        ReasonKind.OOM,
    }
)


@dataclass(frozen=True)
class ModelRef:
    """One model to try, as a source lists it (rank order, 1-based)."""

    model_id: str
    rank: int
    downloads: int | None = None
    pipeline_tag: str | None = None
    library_name: str | None = None
    model_type: str | None = None
    revision: str | None = None
    # A config dict (Hub config.json shape) when the source knows it; tiny/random
    # materialisation starts from it instead of the model type's default config.
    config: dict[str, Any] | None = None
    # For zoo refs: the transformers class to build (e.g. "BertForMaskedLM").
    architecture: str | None = None
    source: str | None = None

    @property
    def key(self) -> str:
        """The resume key: one record per key per sweep directory."""
        return self.model_id if not self.architecture else f"{self.model_id}::{self.architecture}"

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ModelRef:
        names = {f.name for f in dataclasses.fields(cls)}
        return cls(**{k: v for k, v in data.items() if k in names})


@dataclass(frozen=True)
class Reason:
    """Why a stage did not pass: a kind from the closed enum, the op when one is to blame."""

    kind: ReasonKind
    message: str = ""
    op: str | None = None
    exc_type: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"kind": self.kind.value, "op": self.op, "message": self.message, "exc_type": self.exc_type}

    @classmethod
    def from_dict(cls, data: dict[str, Any] | None) -> Reason | None:
        if not data:
            return None
        return cls(
            kind=ReasonKind(data["kind"]),
            message=data.get("message") or "",
            op=data.get("op"),
            exc_type=data.get("exc_type"),
        )


@dataclass(frozen=True)
class StageResult:
    """One stage's outcome."""

    status: Status
    seconds: float = 0.0
    reason: Reason | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "status": self.status.value,
            "seconds": round(self.seconds, 4),
            "reason": self.reason.to_dict() if self.reason else None,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> StageResult:
        return cls(
            status=Status(data["status"]),
            seconds=float(data.get("seconds") or 0.0),
            reason=Reason.from_dict(data.get("reason")),
        )


@dataclass
class ModelRecord:
    """One model on one device in one sweep (one JSONL line in ``records.jsonl``)."""

    sweep_id: str
    model_id: str
    key: str
    device: str
    status: Status
    rank: int | None = None
    downloads: int | None = None
    revision: str | None = None
    pipeline_tag: str | None = None
    library_name: str | None = None
    model_type: str | None = None
    architecture: str | None = None
    dtype: str = "float32"
    weights: str = "tiny"
    stages: dict[str, StageResult] = field(default_factory=dict)
    reason: Reason | None = None
    blockers: list[Reason] = field(default_factory=list)
    fallback_ops: dict[str, int] = field(default_factory=dict)
    graph_breaks: int = 0
    graph_break_reasons: list[str] = field(default_factory=list)
    compile_problems: list[str] = field(default_factory=list)
    max_abs_diff: float | None = None
    peak_memory_bytes: int | None = None
    num_parameters: int | None = None
    seconds: float = 0.0
    versions: dict[str, str] = field(default_factory=dict)
    repro: str = ""
    notes: dict[str, Any] = field(default_factory=dict)
    schema_version: int = SCHEMA_VERSION

    def to_dict(self) -> dict[str, Any]:
        data = dataclasses.asdict(self)
        data["status"] = self.status.value
        data["stages"] = {name: res.to_dict() for name, res in self.stages.items()}
        data["reason"] = self.reason.to_dict() if self.reason else None
        data["blockers"] = [b.to_dict() for b in self.blockers]
        data["seconds"] = round(self.seconds, 4)
        # The serialisation boundary: every file and printout of a record passes here, so
        # a Hub error that echoed a token or an endpoint's password never reaches disk.
        from sweeper.redact import redact_obj

        return redact_obj(data)

    def to_json(self) -> str:
        """One line of JSON (no newline inside; non-ASCII kept readable)."""
        return json.dumps(self.to_dict(), ensure_ascii=False, default=str, allow_nan=True)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ModelRecord:
        names = {f.name for f in dataclasses.fields(cls)}
        kwargs = {k: v for k, v in data.items() if k in names}
        kwargs["status"] = Status(data["status"])
        kwargs["stages"] = {k: StageResult.from_dict(v) for k, v in (data.get("stages") or {}).items()}
        kwargs["reason"] = Reason.from_dict(data.get("reason"))
        kwargs["blockers"] = [Reason.from_dict(b) for b in data.get("blockers") or [] if b]
        return cls(**kwargs)

    @classmethod
    def from_json(cls, line: str) -> ModelRecord:
        return cls.from_dict(json.loads(line))


def base_record(ref: ModelRef, *, sweep_id: str, device: str, status: Status, **extra: Any) -> ModelRecord:
    """A record pre-filled from a ref; used by check and by executors for crash records."""
    return ModelRecord(
        sweep_id=sweep_id,
        model_id=ref.model_id,
        key=ref.key,
        device=device,
        status=status,
        rank=ref.rank,
        downloads=ref.downloads,
        revision=ref.revision,
        pipeline_tag=ref.pipeline_tag,
        library_name=ref.library_name,
        model_type=ref.model_type,
        architecture=ref.architecture,
        **extra,
    )
