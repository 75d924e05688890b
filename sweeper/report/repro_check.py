"""``sweep check-repros OUT``: run every reproducer the report links and say whether each
still fails with its bug's diagnostic.

Each script runs in a fresh interpreter (as a maintainer would run it), in the sweep
folder; what it printed is kept beside it (``repro_status.record_check``), so the next
``sweep report`` marks a reproducer that no longer reproduces. Run it after a new lowering
tool is installed: a bug whose reproducer now lowers is fixed upstream.
"""

from __future__ import annotations

import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from sweeper.devices.trnsim.lowering import tool_version
from sweeper.report import repro_status
from sweeper.report.cause_tables import cause_frame
from sweeper.report.load import read_sweep
from sweeper.report.root_causes import Cause
from sweeper.settings.errors import UsageError

TIMEOUT_S = 300.0


@dataclass(frozen=True)
class Checked:
    """One reproducer run: the bug it stands for, and what it did."""

    repro: str
    cause: Cause
    status: str  # repro_status: reproduces | fails otherwise | lowers | not checked (timed out)
    said: str  # the signature of what it printed


def check_repros(folder: Path, *, timeout: float = TIMEOUT_S, workers: int = 2) -> list[Checked]:
    """Run each reproducer the report links (one per lowering-tool bug); ``UsageError`` when
    the folder has no records."""
    folder = Path(folder)
    data = read_sweep(folder)
    frame = cause_frame(data, folder, ("tool",))
    linked = sorted({(r.repro, r.cause) for r in frame.itertuples(index=False) if r.repro})
    missing = [repro for repro, _ in linked if not (folder / repro).is_file()]
    if missing:
        raise UsageError(f"{folder} lacks {len(missing)} reproducer(s) its records name, e.g. {missing[0]}")
    version = tool_version()

    def run(item: tuple[str, Cause]) -> Checked:
        repro, cause = item
        try:
            done = subprocess.run([sys.executable, repro], cwd=folder, capture_output=True, text=True, timeout=timeout)
        except subprocess.TimeoutExpired:
            return Checked(repro, cause, repro_status.UNCHECKED, f"ran past {timeout:.0f} s")
        outcome = repro_status.record_check(folder, repro, exit_code=done.returncode, output=done.stderr,
                                            tool_version=version)
        return Checked(repro, cause, outcome.against(cause.signature), outcome.signature)

    with ThreadPoolExecutor(max_workers=max(1, workers)) as pool:
        return list(pool.map(run, linked))


def render(results: list[Checked]) -> tuple[str, int]:
    """What the command prints, and its exit code (1 when any reproducer does not reproduce)."""
    lines = []
    for r in results:
        note = "" if r.status == repro_status.REPRODUCES else f"  ({repro_status.mark(r.status, r.said)})"
        lines.append(f"{r.status:>16}  {r.repro}  {r.cause.text()[:100]}{note}")
    good = sum(r.status == repro_status.REPRODUCES for r in results)
    lines.append(f"{good} of {len(results)} reproducers fail with their bug's diagnostic")
    return "\n".join(lines), 0 if good == len(results) else 1
