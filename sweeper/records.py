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

# 3: the record carries its ``outcome``; a version-2 record is given one on read (``settle``).
SCHEMA_VERSION = 3


class Stage(str, Enum):
    """The stages of one model's check, in the order they run."""

    LOAD = "load"
    TO_DEVICE = "to_device"
    FORWARD = "forward"
    BACKWARD = "backward"
    COMPILE = "compile"
    GENERATE = "generate"
    SHAPES = "shapes"


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
    LOWERING_TOOL_ERROR = "lowering_tool_error"
    GRAPH_BREAK = "graph_break"
    NUMERICS = "numerics"
    # The device's two runs with the same seed and inputs differ past the tolerance: it
    # cannot be judged against the CPU (an outcome of its own, ``Outcome.NONDETERMINISTIC``).
    DEVICE_NONDETERMINISTIC = "device_nondeterministic"
    UNTIED_WEIGHTS = "untied_weights"
    NO_GRADIENT = "no_gradient"
    OOM = "oom"
    TIMEOUT = "timeout"
    CRASH = "crash"
    REMOTE_CODE = "remote_code"
    GATED = "gated"
    UNSUPPORTED_LIBRARY = "unsupported_library"
    NOT_PYTORCH = "not_pytorch"  # a format that is not PyTorch (gguf, onnx, mlx, ...): named, never failed
    MISSING_DEPENDENCY = "missing_dependency"
    DOWNLOAD = "download"
    TOO_LARGE = "too_large"
    INPUT_SYNTHESIS = "input_synthesis"
    CONFIG_ERROR = "config_error"
    MODEL_ERROR = "model_error"
    NONFINITE_REFERENCE = "nonfinite_reference"  # the CPU reference has NaN: nothing to judge the device by
    HARNESS = "harness"
    UNKNOWN = "unknown"


class Outcome(str, Enum):
    """What a model counts as in a report: it passed, the origin of the blocker that decided
    it, or skipped (not tried by choice). Decided once, on the record (``decide_outcome``)."""

    PASS = "pass"
    DEVICE = "device"
    LOWERING_TOOL = "lowering_tool"
    HARNESS = "harness"
    MODEL = "model"
    ENVIRONMENT = "environment"
    SKIP = "skip"
    # Only device blockers that say its own two runs differ past the tolerance: neither a
    # pass nor a numerics failure (the device cannot be judged), counted apart.
    NONDETERMINISTIC = "nondeterministic"


class Origin(str, Enum):
    """Who a blocker belongs to: what a reader of the report should act on."""

    DEVICE = "device"  # the device (or its compiler) refuses or gets it wrong: the chip's gap
    LOWERING_TOOL = "lowering_tool"  # the lowering tool fails on an op the device supports
    HARNESS = "harness"  # sweeper's own inputs, config shrink or host-side work: our bug
    MODEL = "model"  # the model fails on CPU too, with its own configuration
    ENVIRONMENT = "environment"  # access, packaging, network: the device was never tried


@dataclass(frozen=True)
class KindInfo:
    """What one reason kind means: its nominal origin, the model status it implies, and
    whether it is soft (the model is wrong but still runs, so later stages keep going)."""

    origin: Origin
    status: Status
    soft: bool = False


_D, _L, _H, _M, _E = Origin.DEVICE, Origin.LOWERING_TOOL, Origin.HARNESS, Origin.MODEL, Origin.ENVIRONMENT

# The one table of reason kinds: check, classify, report and diff read it, nothing else
# keeps kind sets of its own. A device-origin blocker whose CPU control fails the same
# stage is re-attributed (harness or model) on the reason itself, see ``Reason.origin``.
REASON_KINDS: dict[ReasonKind, KindInfo] = {
    ReasonKind.UNSUPPORTED_OP: KindInfo(_D, Status.FAIL),
    ReasonKind.UNSUPPORTED_DTYPE: KindInfo(_D, Status.FAIL),
    ReasonKind.UNSUPPORTED_FEATURE: KindInfo(_D, Status.FAIL),
    ReasonKind.DYNAMIC_SHAPE: KindInfo(_D, Status.FAIL),
    ReasonKind.COMPILE_ERROR: KindInfo(_D, Status.FAIL),
    ReasonKind.LOWERING_TOOL_ERROR: KindInfo(_L, Status.FAIL),
    ReasonKind.GRAPH_BREAK: KindInfo(_D, Status.FAIL),
    ReasonKind.NUMERICS: KindInfo(_D, Status.FAIL),
    ReasonKind.DEVICE_NONDETERMINISTIC: KindInfo(_D, Status.FAIL),
    ReasonKind.UNTIED_WEIGHTS: KindInfo(_D, Status.FAIL, soft=True),
    ReasonKind.NO_GRADIENT: KindInfo(_D, Status.FAIL),
    ReasonKind.OOM: KindInfo(_D, Status.FAIL),
    ReasonKind.TIMEOUT: KindInfo(_D, Status.TIMEOUT),
    ReasonKind.CRASH: KindInfo(_D, Status.CRASH),
    ReasonKind.REMOTE_CODE: KindInfo(_E, Status.SKIP),
    ReasonKind.GATED: KindInfo(_E, Status.ERROR),
    ReasonKind.UNSUPPORTED_LIBRARY: KindInfo(_E, Status.SKIP),
    ReasonKind.NOT_PYTORCH: KindInfo(_E, Status.SKIP),
    ReasonKind.MISSING_DEPENDENCY: KindInfo(_E, Status.ERROR),
    ReasonKind.DOWNLOAD: KindInfo(_E, Status.ERROR),
    ReasonKind.TOO_LARGE: KindInfo(_E, Status.SKIP),
    ReasonKind.CONFIG_ERROR: KindInfo(_E, Status.ERROR),
    ReasonKind.INPUT_SYNTHESIS: KindInfo(_H, Status.ERROR),
    ReasonKind.HARNESS: KindInfo(_H, Status.ERROR),
    ReasonKind.MODEL_ERROR: KindInfo(_M, Status.FAIL),
    ReasonKind.NONFINITE_REFERENCE: KindInfo(_M, Status.FAIL),
    ReasonKind.UNKNOWN: KindInfo(_H, Status.ERROR),
}


# Kinds that say sweeper itself raised the failure (its inputs, its own code): never the
# device's, even when the CPU control passes.
HARNESS_ONLY: frozenset[ReasonKind] = frozenset({ReasonKind.HARNESS, ReasonKind.INPUT_SYNTHESIS})

_KINDS = {k.value: k for k in ReasonKind}
_ORIGINS = {o.value: o for o in Origin}
_STATUSES = {s.value: s for s in Status}
_OUTCOMES = {o.value: o for o in Outcome}


def kind_info(kind: ReasonKind | str) -> KindInfo:
    """The table entry of a kind (a kind read from an older record that this version no
    longer knows counts as the harness's: we cannot say whose it is)."""
    try:
        return REASON_KINDS[ReasonKind(kind)]
    except ValueError:
        return REASON_KINDS[ReasonKind.UNKNOWN]


def kinds_of(origin: Origin) -> frozenset[ReasonKind]:
    """Every kind whose nominal origin is ``origin``."""
    return frozenset(k for k, info in REASON_KINDS.items() if info.origin is origin)


# Environment outcomes: the device was never tried; reports keep them out of the device
# pass-rate denominator.
ENVIRONMENT_KINDS: frozenset[ReasonKind] = kinds_of(Origin.ENVIRONMENT)
DEVICE_KINDS: frozenset[ReasonKind] = kinds_of(Origin.DEVICE)


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
    """Why a stage did not pass: a kind from the closed enum, the op when one is to blame,
    the stage it was found in, and its origin (the kind's nominal one unless a CPU control
    proved otherwise)."""

    kind: ReasonKind
    message: str = ""
    op: str | None = None
    exc_type: str | None = None
    stage: str | None = None
    origin: Origin = None  # type: ignore[assignment]  # filled from the kind table

    def __post_init__(self) -> None:
        if self.origin is None:
            object.__setattr__(self, "origin", kind_info(self.kind).origin)
        elif not isinstance(self.origin, Origin):
            object.__setattr__(self, "origin", Origin(self.origin))
        if self.kind in HARNESS_ONLY and self.origin is Origin.DEVICE:
            # What sweeper itself raised is never the device's, whatever a control showed.
            object.__setattr__(self, "origin", Origin.HARNESS)

    def to_dict(self) -> dict[str, Any]:
        return {
            "kind": self.kind.value,
            "op": self.op,
            "message": self.message,
            "exc_type": self.exc_type,
            "stage": self.stage,
            "origin": self.origin.value,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any] | None) -> Reason | None:
        """A reason as any version wrote it: a kind this version does not know reads as
        ``unknown`` (see ``kind_info``), an origin it does not know as the kind's."""
        if not data:
            return None
        kind, origin = getattr(data.get("kind"), "value", data.get("kind")), data.get("origin")
        return cls(
            kind=_KINDS.get(kind, ReasonKind.UNKNOWN),
            message=data.get("message") or "",
            op=data.get("op"),
            exc_type=data.get("exc_type"),
            stage=data.get("stage"),
            origin=_ORIGINS.get(getattr(origin, "value", origin)),
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
        reason = data.get("reason")
        return cls(
            status=_STATUSES.get(data["status"]) or Status(data["status"]),
            seconds=float(data.get("seconds") or 0.0),
            reason=Reason.from_dict(reason) if reason else None,
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
    # Device vs CPU reference per stage: {"forward": {max_abs, max_rel, within},
    # "backward": {..., where}, "tolerance": {atol, rtol}, "nondeterministic": {...}}.
    numerics: dict[str, Any] = field(default_factory=dict)
    # The float32 math the device's stages ran under, as the device declared it
    # ({float32_matmul, float32_conv: ieee | tf32 | bf16, source, strict}).
    precision: dict[str, Any] = field(default_factory=dict)
    peak_memory_bytes: int | None = None
    num_parameters: int | None = None
    seconds: float = 0.0
    versions: dict[str, str] = field(default_factory=dict)
    repro: str = ""
    notes: dict[str, Any] = field(default_factory=dict)
    # The shapes stage's findings: graphs and recompiles per input shape, symbolic shapes,
    # the compiles a workload of varying lengths costs, padding to buckets (``checks.shapes``).
    shapes: dict[str, Any] = field(default_factory=dict)
    # The generate stage's findings (``checks.generation``): the kind of model, the modes
    # run (eager; compiled with a static cache), each mode's tokens against the CPU's
    # (``tokens_equal``, a tie or the first divergence), its cache class and, compiled, the
    # compiles per decoding step and recompiles per token. Empty for a model that does not
    # generate.
    generation: dict[str, Any] = field(default_factory=dict)
    # Compile seconds by stage ({"compile": {"dynamo", "aot_autograd", "backend", device
    # phases}}): Dynamo's and AOT autograd's share is the floor (``checks.compile_time``).
    compile_phases: dict[str, dict[str, float]] = field(default_factory=dict)
    # What the CPU control did for a model that failed on the device: the failing stage
    # rerun on the CPU with the same built model and inputs (stage, status, reason).
    control: dict[str, Any] | None = None
    # A quantized repo's method and whether the check ran with it applied (method, bits,
    # format, source, evidence, package, package_version, applied, why, layers, adapter:
    # ``sweeper.libraries.quantization``); empty for a plain model.
    quantization: dict[str, Any] = field(default_factory=dict)
    # The model whose check this record copies (same fingerprint); None when it ran itself.
    reused_from: str | None = None
    # pass / the deciding blocker's origin / skip: set by ``settle`` when the record is made.
    outcome: Outcome | None = None
    schema_version: int = SCHEMA_VERSION

    def settle(self) -> ModelRecord:
        """Decide the outcome once, over all blockers (``decide_outcome``): ``reason``
        becomes the blocker that decided it, and a status that followed the old first
        reason follows the deciding one. Returns the record."""
        outcome, reason = decide_outcome(self.status, self.blockers, self.reason)
        old = self.reason
        if reason is not None and reason != old:
            if old is None or self.status is kind_info(old.kind).status:
                self.status = kind_info(reason.kind).status
            self.reason = reason
        self.outcome = outcome
        return self

    def to_dict(self) -> dict[str, Any]:
        # Shallow: the nested records are converted below, and ``redact_obj`` copies every
        # dict and list (``dataclasses.asdict`` deep-copied the record first, a third of
        # the driver's time per model).
        data = {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}
        data["status"] = self.status.value
        data["outcome"] = (self.outcome or decide_outcome(self.status, self.blockers, self.reason)[0]).value
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
        """A record as any schema version wrote it: fields it lacks take their defaults
        (``key`` the model id), parts of the wrong shape (a stage without a known status,
        a blocker that is not a table) are dropped. ``ValueError`` without a known status,
        ``KeyError`` without a model id."""
        # Records this version wrote hold only its fields: copied whole, which is faster.
        kwargs = dict(data) if data.keys() <= _RECORD_FIELDS else {k: v for k, v in data.items() if k in _RECORD_FIELDS}
        kwargs["status"] = Status(data["status"])  # ValueError for a status this version does not know
        kwargs.setdefault("sweep_id", "")
        kwargs.setdefault("device", "")
        kwargs["key"] = data.get("key") or data["model_id"]
        kwargs["stages"] = {
            k: StageResult.from_dict(v)
            for k, v in (data.get("stages") or {}).items()
            if isinstance(v, dict) and v.get("status") in _STATUSES
        }
        reason = data.get("reason")
        kwargs["reason"] = Reason.from_dict(reason) if isinstance(reason, dict) else None
        kwargs["blockers"] = [Reason.from_dict(b) for b in data.get("blockers") or [] if b and isinstance(b, dict)]
        kwargs["outcome"] = _OUTCOMES.get(data.get("outcome"))  # type: ignore[arg-type]
        record = cls(**kwargs)
        if record.outcome is None:  # written before records carried one: decided by today's rule
            record.settle()
            _numerics_over(record)
            record.schema_version = SCHEMA_VERSION  # upgraded: it now holds what version 3 holds
        return record

    @classmethod
    def from_json(cls, line: str) -> ModelRecord:
        return cls.from_dict(json.loads(line))


_RECORD_FIELDS = frozenset(f.name for f in dataclasses.fields(ModelRecord))


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


# Which origin a model with several blockers is counted under: a device gap blocks the
# model whatever else does (fixing the lowering tool or our harness would not make it
# run), so it comes first; the environment only stands alone.
ORIGIN_PRECEDENCE: tuple[Origin, ...] = (Origin.DEVICE, Origin.LOWERING_TOOL, Origin.HARNESS, Origin.MODEL, Origin.ENVIRONMENT)


NUMERICS_TENSORS = {"forward": "output", "backward": "gradient"}  # what each stage compares


def _numerics_over(record: ModelRecord) -> None:
    """A version-2 record's ``numerics.over`` (the stage and tensor past the tolerance),
    from the stage of its numerics blocker and that stage's recorded figures."""
    gap = next((b for b in record.blockers if b.kind is ReasonKind.NUMERICS and b.stage in NUMERICS_TENSORS), None)
    if gap is None or not isinstance(record.numerics, dict) or "over" in record.numerics:
        return
    figures = record.numerics.get(gap.stage)
    figures = figures if isinstance(figures, dict) else {}
    record.numerics["over"] = {"stage": gap.stage, "tensor": NUMERICS_TENSORS[gap.stage], **figures}


def decide_outcome(status: Status, blockers: list[Reason], reason: Reason | None) -> tuple[Outcome, Reason | None]:
    """The one rule: a model's outcome and the blocker that decided it.

    A passing model passes. Otherwise every blocker (the first reason when no list was
    kept) is looked at: the first origin of ``ORIGIN_PRECEDENCE`` present decides, and the
    first blocker of that origin is the reason. A skipped model counts as the environment's
    when an environment blocker skipped it, else as skipped by choice. A failure with no
    blocker recorded is ours to explain (harness). A device whose only device blockers say
    its own two runs differ past the tolerance is ``nondeterministic``.
    """
    if status is Status.PASS:
        return Outcome.PASS, None
    found = list(blockers) or ([reason] if reason is not None else [])
    if status is Status.SKIP:
        env = next((b for b in found if b.origin is Origin.ENVIRONMENT), None)
        return (Outcome.ENVIRONMENT, env) if env is not None else (Outcome.SKIP, reason or (found[0] if found else None))
    for origin in ORIGIN_PRECEDENCE:
        deciding = next((b for b in found if b.origin is origin), None)
        if deciding is not None:
            if origin is Origin.DEVICE and all(b.kind is ReasonKind.DEVICE_NONDETERMINISTIC
                                               for b in found if b.origin is origin):
                return Outcome.NONDETERMINISTIC, deciding
            return Outcome(origin.value), deciding
    return Outcome.HARNESS, reason
