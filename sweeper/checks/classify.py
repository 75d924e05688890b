"""Exception -> Reason: the only place that reads error messages.

Order of evidence: an attribute the raiser set on purpose (``reason_kind``/``op``) beats an
exception type, which beats a message pattern. What nothing recognises stays visible as
``model_error`` (raised inside model code), ``harness`` (raised inside sweeper) or
``unknown``, always with type and message.
"""

from __future__ import annotations

import re
import traceback
from collections.abc import Iterator
from pathlib import Path

from sweeper.records import Reason, ReasonKind, Stage

MAX_MESSAGE = 600

# "Could not run 'aten::foo' with arguments from the 'PrivateUse1' backend", and friends.
_OP_PATTERNS = (
    re.compile(r"Could not run '(?P<op>[\w:.]+)' with arguments from the '(?P<backend>\w+)' backend"),
    re.compile(r"The operator '(?P<op>[\w:.]+)' is not currently implemented for the (?P<backend>\w+) device"),
    re.compile(r"(?P<op>aten::\w+(?:\.\w+)?)\b.*not (?:currently )?(?:implemented|supported)"),
    re.compile(r"failed to legalize operation '(?P<op>[\w.]+)'"),
)
# MLIR constructs that are graph plumbing, not ops (asserts, constants, the opaque op
# wrapper): a diagnostic naming one blames no op.
_MLIR_PLUMBING = re.compile(r"^torch\.(?:runtime|constant|prim|operator)\b")
_DTYPE = re.compile(r"not implemented for '(?P<dtype>\w+)'|unsupported (?:scalar |d)type|does not support (?:the )?dtype", re.I)
_DYNAMIC = re.compile(r"data[- ]dependent|GuardOnDataDependentSymNode|dynamic shape|unbacked symint", re.I)
_OOM = re.compile(r"out of memory|DefaultCPUAllocator: can't allocate memory|Cannot allocate memory", re.I)
_REMOTE_CODE = re.compile(r"trust_remote_code|contains custom code", re.I)
_INPUT = re.compile(r"missing \d+ required positional argument|You have to specify either|must specify|are required", re.I)

# Hub client exceptions -> environment reasons (matched by class name, so the mapping
# holds without importing huggingface_hub here).
_HUB_TYPES = {
    "GatedRepoError": ReasonKind.GATED,
    "RepositoryNotFoundError": ReasonKind.DOWNLOAD,
    "RevisionNotFoundError": ReasonKind.DOWNLOAD,
    "EntryNotFoundError": ReasonKind.DOWNLOAD,
    "RemoteEntryNotFoundError": ReasonKind.DOWNLOAD,
    "LocalEntryNotFoundError": ReasonKind.DOWNLOAD,
    "OfflineModeIsEnabled": ReasonKind.DOWNLOAD,
    "HfHubHTTPError": ReasonKind.DOWNLOAD,
    "ConnectionError": ReasonKind.DOWNLOAD,
    "ConnectError": ReasonKind.DOWNLOAD,
    "ConnectTimeout": ReasonKind.DOWNLOAD,
    "ReadTimeout": ReasonKind.DOWNLOAD,
}


def _chain(exc: BaseException) -> Iterator[BaseException]:
    """The exception, then what it wraps (dynamo's inner_exception, causes, contexts)."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        yield current
        inner = getattr(current, "inner_exception", None)
        current = inner if isinstance(inner, BaseException) else (current.__cause__ or current.__context__)


def _message(exc: BaseException, *, full: bool = False) -> str:
    text = f"{type(exc).__name__}: {exc}".strip()
    if full:
        return text
    # Keep the first lines: enough to recognise, short enough for a report cell.
    lines = [ln for ln in text.splitlines() if ln.strip()][:6]
    text = " | ".join(ln.strip() for ln in lines)
    return text if len(text) <= MAX_MESSAGE else text[: MAX_MESSAGE - 1] + "…"


def _deliberate(chain: list[BaseException]) -> Reason | None:
    for exc in chain:
        kind = getattr(exc, "reason_kind", None)
        if kind is not None:
            kind = ReasonKind(kind)
            # A lowering tool's diagnostic is kept whole: it is the body of a bug report.
            message = _message(exc, full=kind is ReasonKind.LOWERING_TOOL_ERROR)
            return Reason(kind=kind, op=getattr(exc, "op", None), message=message, exc_type=type(exc).__name__)
    return None


def _by_type(exc: BaseException) -> ReasonKind | None:
    names = {cls.__name__ for cls in type(exc).__mro__}
    for name, kind in _HUB_TYPES.items():
        if name in names:
            return kind
    if names & {"OutOfMemoryError", "MemoryError"}:
        return ReasonKind.OOM
    if names & {"ModuleNotFoundError", "ImportError"}:
        return ReasonKind.MISSING_DEPENDENCY
    if "Unsupported" in names and type(exc).__module__.startswith("torch._dynamo"):
        return ReasonKind.GRAPH_BREAK
    return None


def _by_message(text: str) -> tuple[ReasonKind, str | None] | None:
    for pattern in _OP_PATTERNS:
        match = pattern.search(text)
        if match:
            return ReasonKind.UNSUPPORTED_OP, match.group("op")
    if _OOM.search(text):
        return ReasonKind.OOM, None
    if _DYNAMIC.search(text):
        return ReasonKind.DYNAMIC_SHAPE, None
    if _DTYPE.search(text):
        return ReasonKind.UNSUPPORTED_DTYPE, None
    if _REMOTE_CODE.search(text):
        return ReasonKind.REMOTE_CODE, None
    return None


# sweeper's own modules by where this package lies, never by a folder name: a clone is
# usually called "sweeper" too, and its .venv's torch frames must not count as ours.
_OWN_CODE = str(Path(__file__).resolve().parent.parent).replace("\\", "/") + "/"
_DEVICE_CODE = _OWN_CODE + "devices/"


def _origin(exc: BaseException) -> ReasonKind:
    """Where it was raised: model code (a transformers modeling file anywhere on the way
    out), sweeper's own code (the raise itself in a sweeper module outside devices/), or
    neither (torch, a library, a C++ kernel called from wherever: ``unknown``, which the
    CPU control places). An error torch raises inside a call sweeper made (``backward()``)
    is not sweeper's own: what the harness raised is never the device's (``HARNESS_ONLY``),
    so that kind is kept for what sweeper itself raised."""
    frames = traceback.extract_tb(exc.__traceback__)
    for depth, frame in enumerate(reversed(frames)):
        path = str(Path(frame.filename).resolve()).replace("\\", "/")
        if "/transformers/models/" in path or "/transformers/modeling_" in path:
            return ReasonKind.MODEL_ERROR
        if depth == 0 and path.startswith(_OWN_CODE) and not path.startswith(_DEVICE_CODE):
            return ReasonKind.HARNESS
    return ReasonKind.UNKNOWN


def classify(exc: BaseException, *, stage: Stage | str | None = None) -> Reason:
    """Turn any exception raised by a stage into one ``Reason`` from the closed enum."""
    chain = list(_chain(exc))
    deliberate = _deliberate(chain)
    if deliberate is not None:
        return deliberate
    root = chain[-1] if len(chain) > 1 and type(chain[0]).__name__ == "BackendCompilerFailed" else chain[0]
    message = _message(root)
    for candidate in chain:
        kind = _by_type(candidate)
        if kind is not None:
            return Reason(kind=kind, message=_message(candidate), exc_type=type(candidate).__name__)
    for candidate in chain:
        found = _by_message(str(candidate))
        if found is not None:
            kind, op = found
            if kind is ReasonKind.UNSUPPORTED_OP and op and not op.startswith("aten::") and "::" not in op:
                # An MLIR op name (stablehlo/torch dialect): a lowering failure.
                kind = ReasonKind.COMPILE_ERROR
                op = None if _MLIR_PLUMBING.match(op) else op
            return Reason(kind=kind, op=op, message=_message(candidate), exc_type=type(candidate).__name__)
    stage_name = stage.value if isinstance(stage, Stage) else stage
    if stage_name == Stage.COMPILE.value:
        return Reason(kind=ReasonKind.COMPILE_ERROR, message=message, exc_type=type(root).__name__)
    own_compile = _library_compile(chain)
    if own_compile is not None:
        return own_compile
    if stage_name == Stage.FORWARD.value and isinstance(root, TypeError) and _INPUT.search(str(root)):
        return Reason(kind=ReasonKind.INPUT_SYNTHESIS, message=message, exc_type=type(root).__name__)
    return Reason(kind=_origin(root), message=message, exc_type=type(root).__name__)


# Inductor's error when it has no device interface (code generation) for a device type.
_NO_INDUCTOR_DEVICE = re.compile(r"KeyError: '(?P<device>[\w:]+)'")


def _library_compile(chain: list[BaseException]) -> Reason | None:
    """A library that compiles its own code with Inductor (gptqmodel's GPTQ dequantise, on
    every device but NPU and MPS) fails on a device Inductor has no code generation for: a
    capability the device lacks (Inductor code generation), named by the library whose
    code asked for it (``op``)."""
    root = chain[0]
    if type(root).__name__ not in ("InductorError", "BackendCompilerFailed"):
        return None
    found = _NO_INDUCTOR_DEVICE.search(str(root))
    if found is None:
        return None
    caller = _library_frame(root)
    where = f"{caller} compiles its own code with torch.compile (Inductor)" if caller else \
        "code compiled with torch.compile (Inductor) ran in this stage"
    return Reason(kind=ReasonKind.UNSUPPORTED_FEATURE, op=caller and f"inductor codegen ({caller.split(' ')[0]})",
                  message=f"{where}: Inductor has no code generation for device '{found['device']}' "
                          f"({type(root).__name__}: KeyError: '{found['device']}')",
                  exc_type=type(root).__name__)


def _library_frame(exc: BaseException) -> str | None:
    """The innermost frame of an installed library other than torch: ``package (function)``."""
    for frame in reversed(traceback.extract_tb(exc.__traceback__)):
        path = str(Path(frame.filename)).replace("\\", "/")
        if "/site-packages/" not in path or "/site-packages/torch/" in path:
            continue
        package = path.split("/site-packages/", 1)[1].split("/", 1)[0]
        return f"{package} ({frame.name})"
    return None


# Dynamo names the op of a data-dependent break as ``aten.nonzero.default`` in backticks.
_BREAK_OP = re.compile(r"`(?P<op>(?:aten|prims)\.\w+)(?:\.\w+)?`")
_BREAK_METHOD = re.compile(r"\b(Tensor\.\w+)\(\)")


def graph_break_cause(reason: str) -> str:
    """A Dynamo graph-break reason as one short cause that groups across models: its title
    line, with the op (``aten::nonzero``) or tensor method it names. File names, line
    numbers and hints are left out: they differ per model and say nothing of the cause."""
    text = str(reason).strip()
    title = text.splitlines()[0].strip() if text else "unknown"
    op = _BREAK_OP.search(text)
    if op:
        return f"{title} ({op['op'].replace('.', '::', 1)})"
    method = _BREAK_METHOD.search(title) or _BREAK_METHOD.search(text)
    if method and method[1] not in title:
        return f"{title} ({method[1]})"
    return title[:200]
