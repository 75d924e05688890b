"""The nights of a history: which sweep folders, in which order, and what each is called.

``sweep history`` takes sweep folders one by one (in the order given: oldest first), or a
single folder of dated sweep folders (``results/trnsim/2026-12-01``, ``.../2026-12-02``,
as ``configs/cluster/nightly.sh`` lays them out), taken in name order. A night is read
from its records.jsonl and sweep.json alone (``report.load.read_sweep``), so folders
written by older versions, without a report, read the same.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from sweeper.report.load import SweepData, read_sweep
from sweeper.settings.errors import UsageError
from sweeper.storage.folder import RECORDS, SweepFolder


@dataclass
class Night:
    """One sweep of the history: its folder, its label (the folder's name) and its data."""

    path: Path
    label: str
    data: SweepData

    @property
    def date(self) -> str:
        """The day the sweep started (from sweep.json), '' when it does not say."""
        return (self.data.meta.started or "")[:10]


def run_folders(paths: list[Path]) -> list[Path]:
    """The sweep folders ``paths`` name, oldest first; ``UsageError`` when one is not a
    sweep folder, or a lone folder holds no sweep folders either."""
    if not paths:
        raise UsageError("sweep history needs at least one sweep folder")
    if len(paths) == 1 and Path(paths[0]).is_dir() and not SweepFolder(paths[0]).records.is_file():
        found = _dated_runs(Path(paths[0]))
        if not found:
            raise UsageError(f"{paths[0]} is neither a sweep folder nor a folder of sweep folders (no {RECORDS} in it "
                             "or in a folder under it)")
        return found
    folders: list[Path] = []
    seen: set[Path] = set()
    for path in paths:
        SweepFolder(path).require_records()  # a clear error for a folder that is not a sweep's
        real = Path(path).resolve()
        if real not in seen:  # the same night named twice (a ``latest`` link) counts once
            seen.add(real)
            folders.append(Path(path))
    return folders


def _dated_runs(parent: Path) -> list[Path]:
    """Sweep folders right under ``parent``, in name order, links to one of them left out."""
    out: list[Path] = []
    seen: set[Path] = set()
    for child in sorted(parent.iterdir(), key=lambda p: p.name):
        if child.is_symlink() or not child.is_dir() or not SweepFolder(child).records.is_file():
            continue
        real = child.resolve()
        if real not in seen:
            seen.add(real)
            out.append(child)
    return out


def read_nights(paths: list[Path]) -> list[Night]:
    """Each sweep folder as a ``Night``, oldest first (see ``run_folders``)."""
    folders = run_folders([Path(p) for p in paths])
    labels = _labels(folders)
    return [Night(path=folder, label=label, data=read_sweep(folder)) for folder, label in zip(folders, labels)]


def _labels(folders: list[Path]) -> list[str]:
    """Folder names, made unique with their parent's name where two share one."""
    names = [f.resolve().name or str(f) for f in folders]
    if len(set(names)) == len(names):
        return names
    return [f"{f.resolve().parent.name}/{n}" if names.count(n) > 1 else n for f, n in zip(folders, names)]
