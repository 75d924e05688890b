"""Rewrite a sweep folder's repro commands as this version writes them.

A record's repro is made when the model is checked. Folders swept by an earlier version
name the catalog by the absolute path of the machine that swept them; ``refresh_repros``
lists the sweep's models again from its source (``sweep.json`` says which: the catalog must
be readable from here) and makes each command as a sweep of this version would, so the
folder travels. Nothing else in a record changes.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from sweeper.checks.repro import repro_command
from sweeper.records import ModelRecord, ModelRef
from sweeper.settings.config import FLAT, LISTS, SweepConfig
from sweeper.settings.errors import UsageError
from sweeper.sources.base import get_source
from sweeper.storage.folder import SweepFolder
from sweeper.storage.staged import Staged
from sweeper.storage.store import iter_raw


def refresh_repros(out_dir: Path) -> int:
    """Rewrite ``records.jsonl`` of ``out_dir`` with fresh repro commands; the count changed."""
    folder = SweepFolder(out_dir)
    folder.require_records()
    cfg = _settings(folder.read_meta().config or {}, out_dir)
    refs: dict[str, ModelRef] = {ref.key: ref for ref in get_source(cfg).refs()}
    changed, lines = 0, []
    for raw in iter_raw(folder.records):
        record = ModelRecord.from_dict(raw)
        ref = refs.get(record.key)
        if ref is None:
            raise UsageError(f"{record.key} is not in the sweep's source any more: its repro cannot be made again")
        fresh = repro_command(ref, cfg)
        changed += fresh != record.repro
        record.repro = fresh
        lines.append(record.to_json())
    with Staged(folder.root) as staged:
        staged.text(folder.records.name, "".join(line + "\n" for line in lines))
    return changed


def _settings(config: dict[str, Any], out_dir: Path) -> SweepConfig:
    """The sweep's settings as ``sweep.json`` keeps them (flat names), its folder as ``out``."""
    known = {k: (tuple(v) if k in LISTS and v is not None else v) for k, v in config.items() if k in FLAT}
    known["out"] = str(out_dir)
    known["top"] = None  # every model the folder holds, whatever --top listed
    return SweepConfig.of(**known)
