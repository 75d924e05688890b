"""The driver: source -> filter -> resume -> executor -> store -> sweep.json -> report.

Everything that can reject the user's input (device, source, catalog) is checked before
the output folder is created, so bad input writes nothing. The driver alone writes.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import sys
import time
import uuid
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sweeper.check import check_model
from sweeper.config import SweepConfig
from sweeper.devices.base import get_device
from sweeper.errors import UsageError
from sweeper.executors.base import CheckFn, get_executor
from sweeper.hub_http import install
from sweeper.progress import Progress
from sweeper.records import ModelRecord, ModelRef
from sweeper.refstream import RefStream
from sweeper.sources.base import get_source, select
from sweeper.store import RecordStore
from sweeper.versions import versions

SWEEP_FILE = "sweep.json"


@dataclass
class SweepResult:
    """What a finished (or interrupted) sweep reports back to the CLI."""

    out_dir: Path
    total: int
    new_records: int
    skipped_done: int
    report: Path | None
    source: dict[str, Any]


def _now() -> str:
    return dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")


def plan(cfg: SweepConfig) -> tuple[list[ModelRef] | RefStream, dict[str, Any], dict[str, Any]]:
    """Resolve device and source and list the refs; raises UsageError on bad input.

    A source that lists while the sweep runs (the Hub) comes back as a ``RefStream`` with
    its first ref already pulled; any other source's refs come back as a list.
    """
    device = get_device(cfg.device, profile=cfg.device_profile, collect_all=cfg.collect_all)
    ok, why = device.available()
    if not ok:
        raise UsageError(f"device {cfg.device!r} is not usable here: {why}")
    install(cfg)  # before the first Hub request: the listing is rate limited and retried
    source = get_source(cfg)
    stream = RefStream(select(source.refs(), cfg), expected=cfg.top or getattr(source, "limit", None))
    first = stream.first()
    if first is None:
        raise UsageError(f"no models to sweep: the {source.describe().get('name', cfg.source)} source matched nothing")
    refs: list[ModelRef] | RefStream = stream
    if getattr(source, "streaming", False):
        stream.describe = source.describe
    else:
        refs = list(stream.todo(set()))
        if stream.error is not None:
            raise stream.error
    device_info = {"spec": cfg.device, "profile": device.profile_info()}
    source_info = dict(source.describe())
    hub = settle_hub_access(cfg, [first] if isinstance(refs, RefStream) else refs)
    if hub:
        source_info["hub"] = hub
    return refs, source_info, device_info


def go_offline() -> None:
    """Offline for this process (the client read the variable at import) and its children."""
    os.environ["HF_HUB_OFFLINE"] = "1"
    from huggingface_hub import constants

    constants.HF_HUB_OFFLINE = True


def settle_hub_access(cfg: SweepConfig, refs: list[ModelRef]) -> str | None:
    """Probe the Hub once when refs would fetch their config.json from it.

    When it does not answer, the sweep goes offline (``HF_HUB_OFFLINE=1``, inherited by
    workers started afterwards) so each model starts from its type's default config at
    once instead of retrying the network; returns the note that says so.
    """
    from sweeper.sources.hub import hub_offline, probe

    wants_hub = any(ref.config is None and ref.source not in (None, "zoo") for ref in refs)
    if not wants_hub or hub_offline():
        return None
    why = probe(cfg.hub_timeout)
    if why is None:
        return None
    go_offline()
    if cfg.weights == "pretrained":
        return f"Hub unreachable ({why}): pretrained weights will fail as download errors"
    return f"Hub unreachable ({why}): configs are the model types' defaults"


def run_sweep(cfg: SweepConfig, *, check: CheckFn = check_model, quiet: bool = False, write_report: bool = True) -> SweepResult:
    """Run (or resume) the sweep ``cfg`` describes; returns counts and where things went."""
    refs, source_info, device_info = plan(cfg)
    out = cfg.out_dir
    stream = refs if isinstance(refs, RefStream) else None
    total = len(refs) if stream is None else stream.expected or 0
    if not quiet:
        why = "".join(f" ({source_info[k]})" for k in ("why", "hub") if source_info.get(k))
        count = f"{total} models" if stream is None else f"up to {total} models as the listing streams"
        print(f"source: {source_info.get('name')}{why}; {count}; device {cfg.device}; out {out}", file=sys.stderr)
    store = RecordStore(out).open()
    done = store.done_keys()
    if stream is None:
        todo: Iterable[ModelRef] = [ref for ref in refs if ref.key not in done]
        skipped = len(refs) - len(todo)  # type: ignore[arg-type]
    else:
        todo, skipped = stream.todo(done), len(done)
    meta = _start_meta(out, cfg, source_info, device_info, total=total)
    progress = Progress(total - skipped, already_done=skipped, quiet=quiet)
    started = time.monotonic()

    def on_record(record: ModelRecord) -> None:
        record.sweep_id = meta["sweep_id"]
        store.append(record)
        progress.update(record)

    executor = get_executor(cfg)
    try:
        executor.run(iter(todo), cfg, check=check, on_record=on_record)
    finally:
        executor.close()
        store.close()
        progress.close()
        if stream is not None:
            total, skipped = stream.count, stream.skipped
            source_info = meta["source"] = dict(stream.describe()) if stream.describe else source_info
            meta["total"] = total
        meta.update(ended=_now(), wall_seconds=round(meta.get("wall_seconds", 0.0) + time.monotonic() - started, 2))
        _write_meta(out, meta)
    if stream is not None and stream.error is not None:
        raise stream.error  # the listing broke off: the records so far are kept, a rerun resumes
    report = _report(out) if write_report else None
    return SweepResult(out, total, progress.done, skipped, report, source_info)


def _start_meta(out: Path, cfg: SweepConfig, source: dict, device: dict, *, total: int) -> dict[str, Any]:
    """sweep.json: a resumed sweep keeps its id and start; wall time accumulates."""
    path = out / SWEEP_FILE
    previous: dict[str, Any] = {}
    if path.exists():
        try:
            previous = json.loads(path.read_text())
        except ValueError:
            previous = {}
    meta = {
        "sweep_id": previous.get("sweep_id") or f"{dt.date.today():%Y%m%d}-{uuid.uuid4().hex[:8]}",
        "started": previous.get("started") or _now(),
        "resumed": bool(previous),
        "wall_seconds": float(previous.get("wall_seconds") or 0.0),
        "config": cfg.to_dict(),
        "source": source,
        "device": device,
        "versions": versions(),
        "total": total,
    }
    _write_meta(out, meta)
    return meta


def _write_meta(out: Path, meta: dict[str, Any]) -> None:
    tmp = out / (SWEEP_FILE + ".tmp")
    tmp.write_text(json.dumps(meta, indent=2, default=str) + "\n")
    os.replace(tmp, out / SWEEP_FILE)


def _report(out: Path) -> Path | None:
    """Write the report; a report failure never loses the records."""
    try:
        from sweeper.report.commands import write_report
    except ImportError:
        return None
    try:
        return write_report(out)
    except Exception as exc:  # the records are safe on disk; say why the report is missing
        print(f"sweep: warning: report not written: {type(exc).__name__}: {exc}", file=sys.stderr)
        return None
