"""What a finding is about: its op, or, for a lowering-tool failure that names no op, the graph.

The lowering tool can fail on a whole graph without naming an op (a verifier, an importer
exception, ops that lower alone but not together). Such a blocker has no op; the trnsim
compiler writes a reproducer of the graph, ``repros/graph-<hash>.py``, and names it in the
message (``reproducer: PATH``). Grouped by op alone, every one of them would fall under one
nameless row; grouped by graph (or, without a reproducer, by the failure's signature), each
distinct failing graph is a row with its reproducer.
"""

from __future__ import annotations

import re
from pathlib import PurePath

import pandas as pd

from sweeper.storage.folder import REPROS

WHOLE_GRAPH = "whole graph (no op named)"
# Kinds whose op-less blockers are about a graph the lowering tool failed on.
GRAPH_KINDS = frozenset({"lowering_tool_error"})
SIGNATURE_CHARS = 200

_REPRO_LINE = re.compile(r"^reproducer: (.+?)\s*$", re.M)
_SAFE_NAME = re.compile(r"^[\w.-]+\.py$")
_GRAPH_FILE = re.compile(r"^(graph-[0-9a-f]+)\.py$")
_EXC_PREFIX = re.compile(r"^[A-Za-z_][\w.]*(Error|Exception): ")
# The verdict's fixed words between where the failure was met and what the tool said.
_VERDICT = re.compile(r": .*?\(a lowering-tool finding, not a chip gap\): ")
_SSA = re.compile(r"%[\w.#]+")


def reproducer(message: str) -> str:
    """The reproducer a message names, as a path inside the sweep folder
    (``repros/graph-ab12.py``); '' when it names none."""
    found = _REPRO_LINE.search(message or "")
    if not found:
        return ""
    name = PurePath(found.group(1)).name
    return f"{REPROS}/{name}" if _SAFE_NAME.match(name) else ""


def graph_key(repro: str) -> str:
    """``graph-<hash>`` when ``repro`` is a whole-graph reproducer, else ''."""
    found = _GRAPH_FILE.match(PurePath(repro).name) if repro else None
    return found.group(1) if found else ""


def signature(message: str) -> str:
    """The failure in one short line: where it was met and what the tool said, without the
    exception type, the verdict's fixed words and SSA value names (``%12``), so the same
    failure reads the same in every model."""
    first = (message or "").strip().splitlines()[0] if (message or "").strip() else ""
    first = _VERDICT.sub(": ", _EXC_PREFIX.sub("", first), count=1)
    first = _SSA.sub("%…", first)
    return first if len(first) <= SIGNATURE_CHARS else first[: SIGNATURE_CHARS - 1] + "…"


def annotate(blockers: pd.DataFrame) -> pd.DataFrame:
    """``blockers`` (kind, op, message, ...) with ``graph``, ``signature`` and ``repro``
    columns: the last for every blocker that names a reproducer, the first two only for an
    op-less blocker of a graph kind (empty otherwise, so other blockers group as before)."""
    out = blockers.copy()
    out["repro"] = [reproducer(m) for m in out["message"].tolist()]
    whole = out["kind"].isin(GRAPH_KINDS).to_numpy() & (out["op"].fillna("") == "").to_numpy()
    out["graph"] = [graph_key(r) if w else "" for r, w in zip(out["repro"].tolist(), whole)]
    out["signature"] = [signature(m) if w else "" for m, w in zip(out["message"].tolist(), whole)]
    return out


def sample(kind: str, message: str) -> str:
    """The text a findings row shows: a lowering-tool failure's signature (what the tool
    said, not the verdict's fixed words, which would fill the cell), any other message whole."""
    return signature(message) if kind in GRAPH_KINDS else message


def is_whole_graph(graph: str, signature: str) -> bool:
    """Whether a findings row is an op-less graph failure (it has a graph key or a signature)."""
    return bool(graph or signature)
