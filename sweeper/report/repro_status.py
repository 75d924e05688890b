"""Whether each reproducer reproduces the failure it stands for.

A reproducer is run when it is written (``devices.trnsim.reproducer``): the diagnostic it
failed with then is kept beside it, ``repros/NAME.json``. ``sweep check-repros`` runs every
script again and writes what it saw into the same file (``checked``). A cause's reproducer
*reproduces* when the signature of what the script said is its cause's signature; one that
fails otherwise, or lowers, is marked so wherever the report links it.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path, PurePath

from sweeper.diagnostics import diagnostic_lines, signature
from sweeper.redact import redact

REPRODUCES, DIFFERS, LOWERS, UNCHECKED = "reproduces", "fails otherwise", "lowers", "not checked"


@dataclass(frozen=True)
class Outcome:
    """What a reproducer did the last time it ran: its exit code and its diagnostic's signature."""

    exit: int | None
    signature: str
    torch_mlir: str = ""

    def against(self, wanted: str) -> str:
        """This outcome read for a cause with signature ``wanted``."""
        if self.exit is None:
            return UNCHECKED
        if self.exit == 0:
            return LOWERS
        return REPRODUCES if not wanted or self.signature == wanted else DIFFERS


NOT_CHECKED = Outcome(None, "")


def sidecar(folder: Path, repro: str) -> Path:
    """``repros/NAME.json`` for ``repros/NAME.py``."""
    return Path(folder) / PurePath(repro).with_suffix(".json")


def read_outcome(folder: Path | None, repro: str) -> Outcome:
    """The reproducer's last outcome: a re-run's (``checked``) over the one of its writing;
    ``NOT_CHECKED`` when the folder keeps neither (a sweep of an older version)."""
    if folder is None or not repro:
        return NOT_CHECKED
    try:
        saved = json.loads(sidecar(folder, repro).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return NOT_CHECKED
    last = saved.get("checked") or saved
    code = last.get("exit")
    return Outcome(code if isinstance(code, int) else None, str(last.get("signature") or ""),
                   str(last.get("torch-mlir") or ""))


def record_check(folder: Path, repro: str, *, exit_code: int, output: str, tool_version: str) -> Outcome:
    """Keep what a re-run of ``repro`` saw beside it (``checked``) and return it."""
    path = sidecar(folder, repro)
    try:
        saved = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        saved = {"script": PurePath(repro).name}
    outcome = Outcome(exit_code, signature(output) if exit_code else "", tool_version)
    saved["checked"] = {"exit": exit_code, "signature": outcome.signature, "torch-mlir": tool_version,
                        "diagnostic": redact("\n".join(diagnostic_lines(output)))[-4000:]}
    saved["diagnostic"] = redact(str(saved.get("diagnostic") or ""))
    path.write_text(json.dumps(saved, indent=1) + "\n", encoding="utf-8")
    return outcome


def mark(status: str, said: str = "") -> str:
    """The words a report cell gives a reproducer's status (empty for one that reproduces)."""
    if status == REPRODUCES:
        return ""
    if status == DIFFERS:
        return f"does not reproduce this diagnostic (it fails with: {said})"
    if status == LOWERS:
        return "does not reproduce: it lowers"
    return "not checked"
