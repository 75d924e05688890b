"""Expected results: a baseline a team checks in, and a sweep judged against it.

``sweep expect RUN --write expected.csv`` writes one line per model: its ``model`` (the
record's key), ``outcome`` (the report's outcome vocabulary), ``blocking_op``, ``signature``
(the first blocker's kind and its message in one line, numbers and SSA names folded so
that the same failure reads the same each night) and ``tracking``, a free column (an
issue link, an owner) kept across rewrites. ``sweep diff --expected expected.csv RUN``
then sorts every model of the run against it (``judge``):

- *worse*: expected to pass and now fails, or fails another way (another outcome, reason
  kind or blocking op): the command exits 1 and names each with its reason;
- *better*: expected to fail and now passes; *reworded*: the same failure with another
  signature; *unavailable*: now gated or skipped (the environment's doing, not the
  device's); *new* and *missing* models: none of these fail the gate, and each prints the
  baseline line to change.
"""

from __future__ import annotations

import csv
import io
import re
from dataclasses import dataclass
from pathlib import Path

from sweeper.report.findings import signature as message_signature
from sweeper.report.load import SweepData
from sweeper.settings.errors import UsageError

COLUMNS = ["model", "outcome", "blocking_op", "signature", "tracking"]
UNAVAILABLE = ("environment", "skip")
_NUMBER = re.compile(r"(?<![\w.])[-+]?\d+(?:\.\d+)?(?:e[-+]?\d+)?(?![\w])", re.I)
_HEX = re.compile(r"\b[0-9a-f]{8,}\b")


def signature(kind: object, message: object) -> str:
    """The first blocker in one stable line: ``kind: message`` with numbers and hashes folded."""
    if not isinstance(kind, str) or not kind:
        return ""
    text = _HEX.sub("#", _NUMBER.sub("N", message_signature(str(message or ""))))
    return f"{kind}: {text}" if text else kind


def baseline_rows(data: SweepData) -> list[dict[str, str]]:
    """One expected line per model of a sweep, sorted by model (stable diffs when ranks move)."""
    m = data.models
    rows = [
        {"model": str(key), "outcome": str(cat), "blocking_op": op if isinstance(op, str) else "",
         "signature": "" if cat == "pass" else signature(kind, msg), "tracking": ""}
        for key, cat, op, kind, msg in zip(m["key"], m["category"], m["reason_op"], m["reason_kind"], m["reason_message"])
    ]  # fmt: skip
    return sorted(rows, key=lambda r: r["model"])


def read_expected(path: Path) -> dict[str, dict[str, str]]:
    """expected.csv by model; ``UsageError`` when it is missing or not such a file."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        raise UsageError(f"cannot read the expected results {path}: {exc.strerror or exc}") from None
    reader = csv.DictReader(io.StringIO(text))
    missing = [c for c in COLUMNS[:2] if c not in (reader.fieldnames or [])]
    if missing:
        raise UsageError(f"{path} is not an expected-results file: no {', '.join(missing)} column "
                         f"(write one with `sweep expect RUN --write {path}`)")
    out: dict[str, dict[str, str]] = {}
    for row in reader:
        model = (row.get("model") or "").strip()
        if model:
            out[model] = {c: (row.get(c) or "").strip() for c in COLUMNS}
    return out


def format_rows(rows: list[dict[str, str]]) -> str:
    """CSV text of ``rows`` under the header."""
    buf = io.StringIO()
    writer = csv.DictWriter(buf, fieldnames=COLUMNS, lineterminator="\n")
    writer.writeheader()
    writer.writerows(rows)
    return buf.getvalue()


def line(row: dict[str, str]) -> str:
    """One row as its CSV line (what a team edits in expected.csv)."""
    return format_rows([row]).splitlines()[1]


def write_expected(data: SweepData, path: Path | None) -> str:
    """The baseline of a sweep as CSV, keeping the ``tracking`` column of an earlier file at
    ``path``; written to ``path`` when given. Returns the text."""
    rows = baseline_rows(data)
    if path is not None and Path(path).is_file():
        kept = read_expected(path)
        for row in rows:
            row["tracking"] = kept.get(row["model"], {}).get("tracking", "")
    text = format_rows(rows)
    if path is not None:
        Path(path).write_text(text, encoding="utf-8")
    return text


@dataclass
class Judged:
    """A model of the run against its expected line: the verdict, the lines and the reason."""

    verdict: str  # worse | better | reworded | unavailable | new | missing
    model: str
    expected: dict[str, str] | None
    now: dict[str, str] | None
    reason: str = ""


def judge(data: SweepData, expected: dict[str, dict[str, str]]) -> list[Judged]:
    """Every model whose result differs from its expected line (see the module docstring)."""
    now = {r["model"]: r for r in baseline_rows(data)}
    reasons = dict(zip(data.models["key"], data.models["reason_message"]))
    out: list[Judged] = []
    for model, row in now.items():
        want = expected.get(model)
        if want is not None:
            row["tracking"] = want.get("tracking", "")
        verdict = _verdict(want, row)
        if verdict:
            message = str(reasons.get(model) or "").strip().splitlines()
            out.append(Judged(verdict, model, want, row, message[0] if message else ""))
    out += [Judged("missing", model, want, None) for model, want in expected.items() if model not in now]
    return out


def _verdict(want: dict[str, str] | None, now: dict[str, str]) -> str:
    if want is None:
        return "new"
    if want["outcome"] == now["outcome"]:
        same = want.get("blocking_op", "") == now["blocking_op"] and _kind(want) == _kind(now)
        if not same and now["outcome"] not in UNAVAILABLE:
            return "worse"
        return "reworded" if want.get("signature", "") != now["signature"] else ""
    if now["outcome"] == "pass":
        return "better"
    if now["outcome"] in UNAVAILABLE:
        return "unavailable"
    return "worse"


def _kind(row: dict[str, str]) -> str:
    return (row.get("signature") or "").split(":", 1)[0]


HEADINGS = {
    "worse": "worse than expected",
    "better": "better than expected",
    "reworded": "the same failure, reworded",
    "unavailable": "unavailable now (environment or skip; not the device's doing)",
    "new": "new models (no expected line)",
    "missing": "missing from this run",
}


def render_judgement(judged: list[Judged], *, expected_path: str) -> tuple[str, int]:
    """The text ``sweep diff --expected`` prints and its exit code: 1 when any model is worse
    than expected. Every other difference prints the baseline lines to change."""
    if not judged:
        return f"every model as expected ({expected_path})", 0
    parts: list[str] = []
    for verdict, heading in HEADINGS.items():
        mine = [j for j in judged if j.verdict == verdict]
        if not mine:
            continue
        parts.append(f"{heading}: {len(mine)} model{'s' if len(mine) != 1 else ''}")
        for j in mine:
            parts.append("  " + _said(j))
    changes = [j for j in judged if j.verdict != "worse"]
    if changes:
        parts.append(f'lines of {expected_path} to change (each "-" line becomes the "+" line below it):')
        for j in changes:
            if j.expected is not None:
                parts.append(f"- {line(j.expected)}")
            if j.now is not None:
                parts.append(f"+ {line(j.now)}")
    worse = sum(j.verdict == "worse" for j in judged)
    return "\n".join(parts), 1 if worse else 0


def _said(j: Judged) -> str:
    """One model's difference in words."""
    def show(row: dict[str, str] | None) -> str:
        if row is None:
            return "absent"
        op = f" {row['blocking_op']}" if row.get("blocking_op") else ""
        kind = _kind(row)
        return row["outcome"] + (f" ({kind}{op})" if kind else op)

    text = f"{j.model}: expected {show(j.expected)}, now {show(j.now)}"
    if j.expected and j.expected.get("tracking"):
        text += f" [tracking: {j.expected['tracking']}]"
    return text + (f" — {j.reason}" if j.reason and j.verdict == "worse" else "")
