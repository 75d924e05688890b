"""Root causes: what one fix removes, named the way the team that fixes it names it.

A model's blockers are symptoms; many share one cause. A cause is one of:

- ``op``: an op with its backward (``aten::X`` and ``aten::X_backward``, any overload) the
  device refuses or fails compiling: the device's to lower;
- ``tool``: a lowering-tool bug, by the op it fails on and its diagnostic's signature
  (``sweeper.diagnostics``): five diagnostics of ``convolution_backward`` are five bugs,
  each with its own models and reproducer; one the tool fails on a whole graph is named by
  the signature alone;
- ``dtype``: a dtype the device lacks (``complex64``, ``float64``), with every op refused for
  it; a lowering-tool failure on an op the same model refuses for its dtype belongs here too
  (lowering ``_fft_r2c`` is no use while its complex64 result cannot live on the device);
- ``feature``: a capability the device lacks (dynamic shapes, sparse or nested tensors, ...).

Any other blocker (numerics, a crash, the harness's, the model's, the environment's) is no
cause a device team fixes: ``None``.
"""

from __future__ import annotations

import re
from collections import Counter, defaultdict
from typing import NamedTuple

import pandas as pd

from sweeper.diagnostics import signature
from sweeper.report import findings
from sweeper.report.escape import code, md
from sweeper.report.load import SweepData
from sweeper.report.roadmap import op_blockers

DEVICE, TOOL = "device", "lowering tool"
KINDS = ("op", "tool", "dtype", "feature")
# ``_backward`` and what some backward ops add after it (``_softmax_backward_data``).
_BACKWARD = re.compile(r"_backward(?:_[a-z0-9_]+)?$")
_DTYPE = re.compile(r"\btorch\.(\w+)")
_FEATURE = re.compile(r"trnsim has no (\w+) tensors|\b(forward_ad|sparse|nested)\b")
_NO_INDUCTOR = "Inductor has no code generation for device"
FEATURE_KINDS = {"dynamic_shape": "dynamic shapes", "unsupported_feature": "", "unsupported_layout": ""}


class Cause(NamedTuple):
    """One root cause (see the module's docstring): its kind, what it names, and for a
    lowering-tool bug the diagnostic's signature."""

    kind: str
    name: str
    signature: str = ""

    @property
    def whose(self) -> str:
        """Who fixes it: the lowering tool's maintainers, or the device's team."""
        return TOOL if self.kind == "tool" else DEVICE

    def text(self) -> str:
        """The cause in plain words (summary.json, the page, history)."""
        if self.kind == "op":
            return f"lower {self.name} (+ backward)"
        if self.kind == "tool":
            return f"{self.name or 'a whole graph'}: {self.signature}"
        if self.kind == "dtype":
            return f"dtype {self.name} on the device"
        return f"{self.name} on the device"

    def label(self) -> str:
        """The cause as a report row names it (Markdown)."""
        if self.kind == "op":
            return f"lower {code(self.name)} (+ backward)"
        if self.kind == "tool":
            subject = code(self.name) if self.name else md(findings.WHOLE_GRAPH)
            return f"{subject}: {md(self.signature)}"
        if self.kind == "dtype":
            return f"dtype {code(self.name)} on the device"
        return f"{md(self.name)} on the device"


def base_op(op: str) -> str:
    """The op a device cause is named by: no overload, no ``_backward``
    (``aten::max_pool2d_with_indices_backward.default`` -> ``aten::max_pool2d_with_indices``)."""
    namespace, sep, name = op.rpartition("::")
    name = name.split(".", 1)[0]
    return f"{namespace}{sep}{_BACKWARD.sub('', name) or name}"


def plain_op(op: str) -> str:
    """An op without its overload (``aten::slice.Tensor`` -> ``aten::slice``)."""
    namespace, sep, name = op.rpartition("::")
    return f"{namespace}{sep}{name.split('.', 1)[0]}"


def dtype_of(message: str) -> str:
    """The dtype a refusal names (``torch.complex64`` -> ``complex64``), else ``unknown``."""
    found = _DTYPE.findall(message or "")
    return found[-1] if found else "unknown"


def feature_of(kind: str, message: str) -> str:
    """The capability a feature refusal names."""
    if FEATURE_KINDS.get(kind):
        return FEATURE_KINDS[kind]
    if _NO_INDUCTOR in (message or ""):
        return "Inductor code generation"  # a library compiles its own code with it
    found = _FEATURE.search(message or "")
    word = next((g for g in found.groups() if g), "") if found else ""
    return f"{word} tensors" if word in ("sparse", "nested") else (word.replace("_", " ") or kind.replace("_", " "))


def blocker_causes(data: SweepData) -> list[tuple[int, Cause | None]]:
    """Each blocker of ``data.blockers`` as (model row, its cause or None), in order."""
    b = data.blockers
    if b.empty:
        return []
    ops = b["op"].map(lambda o: o if isinstance(o, str) else "").tolist()
    device_op = op_blockers(b).tolist()
    rows, kinds, origins, messages = b["row"].tolist(), b["kind"].tolist(), b["origin"].tolist(), b["message"].tolist()
    # Per model, the ops it refuses for their dtype, and which dtype.
    refused: dict[tuple[int, str], str] = {}
    for row, kind, origin, op, message in zip(rows, kinds, origins, ops, messages):
        if kind == "unsupported_dtype" and origin == "device" and op:
            refused.setdefault((row, base_op(op)), dtype_of(message))
    out: list[tuple[int, Cause | None]] = []
    for row, kind, origin, op, message, is_op in zip(rows, kinds, origins, ops, messages, device_op):
        out.append((row, _cause(row, kind, origin, op, message or "", is_op, refused)))
    return out


def _cause(row: int, kind: str, origin: str, op: str, message: str, is_op: bool,
           refused: dict[tuple[int, str], str]) -> Cause | None:
    if origin == "lowering_tool":
        dtype = refused.get((row, base_op(op))) if op else None
        if dtype:
            return Cause("dtype", dtype)
        return Cause("tool", plain_op(op) if op else "", signature(message) or findings.graph_of(message))
    if origin != "device":
        return None
    if is_op:
        return Cause("op", base_op(op))
    if kind == "unsupported_dtype":
        return Cause("dtype", dtype_of(message))
    if kind in FEATURE_KINDS:
        return Cause("feature", feature_of(kind, message))
    return None


def reproducers(data: SweepData) -> dict[Cause, str]:
    """Each lowering-tool cause's reproducer: the one its models' blockers name most often
    (``repros/NAME.py``), when any names one."""
    named: dict[Cause, Counter] = defaultdict(Counter)
    messages = data.blockers["message"].tolist() if not data.blockers.empty else []
    for (_, cause), message in zip(blocker_causes(data), messages):
        if cause is not None and cause.kind == "tool":
            repro = findings.reproducer(message)
            if repro:
                named[cause][repro] += 1
    return {cause: sorted(c.items(), key=lambda kv: (-kv[1], kv[0]))[0][0] for cause, c in named.items()}


def cause_models(data: SweepData) -> dict[Cause, set[int]]:
    """The failing models (rows) each cause blocks."""
    failing = (data.models["category"] != "pass").to_numpy()
    found: dict[Cause, set[int]] = defaultdict(set)
    for row, cause in blocker_causes(data):
        if cause is not None and failing[row]:
            found[cause].add(row)
    return dict(found)


def ops_of(data: SweepData, dtype: str) -> pd.DataFrame:
    """For a dtype cause: the ops refused for it and the modules whose code made them (as
    the compile stage's messages name them), with the models each blocks."""
    b = data.blockers
    if b.empty:
        return pd.DataFrame(columns=["op", "modules", "models"])
    mine = b[(b["kind"] == "unsupported_dtype") & b["message"].map(lambda m: dtype_of(m) == dtype)]
    modules = mine["message"].str.extract(r"\(in module ([^)]*)\)")[0].fillna("")
    frame = pd.DataFrame({"op": mine["op"].fillna("").map(lambda o: plain_op(o) if o else ""),
                          "module": modules, "row": mine["row"]})
    out = frame.groupby("op").agg(models=("row", "nunique"), modules=("module", lambda s: sorted({x for x in s if x})))
    return out.reset_index().sort_values(["models", "op"], ascending=[False, True], kind="stable")
