"""The driver: source -> filter -> resume -> executor -> store -> sweep.json -> report.

Everything that can reject the user's input (device, source, catalog) is checked before
the output folder is created, so bad input writes nothing. The driver alone writes.
"""

from __future__ import annotations

import os
import sys
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sweeper.checks.versions import versions
from sweeper.devices.spec import DeviceSpec, resolve_device
from sweeper.executors.base import Check, CheckFn, get_executor, settle_executor
from sweeper.executors.order import longest_first
from sweeper.hub.access import settle_hub_access
from sweeper.hub.http import install
from sweeper.records import ModelRecord, ModelRef
from sweeper.report.terminal_bar import TerminalBar
from sweeper.settings.config import SweepConfig
from sweeper.settings.errors import UsageError
from sweeper.sources.base import get_source, select
from sweeper.sources.refstream import RefStream
from sweeper.storage.cache import describe as describe_cache
from sweeper.storage.folder import SweepFolder
from sweeper.storage.lock import own_folder
from sweeper.storage.store import RecordStore
from sweeper.storage.sweep_meta import SweepMeta

SAY_AFTER_S = 0.3  # planning longer than this says so (a person sees something within a second)


@dataclass
class SweepResult:
    """What a finished (or interrupted) sweep reports back to the CLI."""

    out_dir: Path
    total: int
    new_records: int
    skipped_done: int
    report: Path | None
    source: dict[str, Any]


PlanResult = tuple[list[ModelRef] | RefStream, dict[str, Any], DeviceSpec]


def plan(cfg: SweepConfig, *, say: Callable[[str], None] | None = None) -> PlanResult:
    """Resolve device (its ``DeviceSpec``, made once here) and source and list the refs;
    raises UsageError on bad input.

    A source that lists while the sweep runs (the Hub) comes back as a ``RefStream`` with
    its first ref already pulled; any other source's refs come back as a list. ``say``
    hears a first line when planning takes more than a moment (importing torch, listing
    the zoo); bad input found at once (an unknown device, a malformed catalog) stays a
    single error line.
    """
    line = f"sweep: planning ({cfg.source.name} source, device {cfg.device.spec}; importing torch) ..."
    timer = threading.Timer(SAY_AFTER_S, say or (lambda text: None), [line])
    timer.daemon = True
    timer.start()
    try:
        return _plan(cfg)
    finally:
        timer.cancel()


def _plan(cfg: SweepConfig) -> PlanResult:
    spec, _ = resolve_device(cfg, out_dir=str(cfg.out_dir))
    install(cfg)  # before the first Hub request: the listing is rate limited and retried
    source = get_source(cfg)
    stream = RefStream(select(source.refs(), cfg), expected=cfg.source.top or getattr(source, "limit", None))
    first = stream.first()
    if first is None:
        raise UsageError(f"no models to sweep: the {source.describe().get('name', cfg.source.name)} source matched nothing")
    refs: list[ModelRef] | RefStream = stream
    if getattr(source, "streaming", False):
        stream.describe = source.describe
    else:
        refs = list(stream.todo(set()))
        if stream.error is not None:
            raise stream.error
    source_info = dict(source.describe())
    hub = settle_hub_access([first] if isinstance(refs, RefStream) else refs,
                            timeout=cfg.source.hub_timeout, weights=cfg.materialise.weights)
    if hub:
        source_info["hub"] = hub
    return refs, source_info, spec


def run_sweep(cfg: SweepConfig, *, check: CheckFn | None = None, quiet: bool = False, write_report: bool = True) -> SweepResult:
    """Run (or resume) the sweep ``cfg`` describes; returns counts and where things went.

    Each distinct check runs once (``sweeper.storage.reuse``) unless ``cfg.output.reuse`` is off or
    ``check`` is not the real ``check_model``; refs a live listing streams are each run.
    The output folder is locked for the whole run: a second sweep on it exits 2.
    """
    cfg = settle_executor(cfg, _say)
    refs, source_info, spec = plan(cfg, say=None if quiet else _say)
    with own_folder(cfg.out_dir):
        return _run(cfg, refs, source_info, spec, check=check, quiet=quiet, write_report=write_report)


def _run(
    cfg: SweepConfig, refs: Any, source_info: dict[str, Any], spec: DeviceSpec, *,
    check: CheckFn | None, quiet: bool, write_report: bool,
) -> SweepResult:
    from sweeper.storage.reuse import for_sweep, known_answers

    out = cfg.out_dir
    stream = refs if isinstance(refs, RefStream) else None
    total = len(refs) if stream is None else stream.expected or 0
    if not quiet:
        why = "".join(f" ({source_info[k]})" for k in ("why", "hub") if source_info.get(k))
        count = f"{total} models" if stream is None else f"up to {total} models as the listing streams"
        print(f"source: {source_info.get('name')}{why}; {count}; device {cfg.device.spec}; out {out}", file=sys.stderr)
    store = RecordStore(out).open()
    if store.rejected_lines:
        print(
            f"sweep: warning: {store.rejected_lines} line(s) of {store.path} were not records; "
            f"moved to {store.rejected_path}", file=sys.stderr,
        )
    done = store.done_keys()
    real_check = check is None or (getattr(check, "__module__", ""), getattr(check, "__name__", "")) == ("sweeper.checks.checker", "check_model")
    device_info = spec.info()
    reuse = for_sweep(cfg, device_info, known=known_answers(out) if done and cfg.output.reuse else (), fingerprinted=real_check)
    skipped = len(done) if stream is not None else sum(1 for ref in refs if ref.key in done)
    folder = SweepFolder(out)
    meta = _start_meta(folder, cfg, source_info, device_info, total=total)
    progress = TerminalBar(total - skipped, already_done=skipped, quiet=quiet)
    started = time.monotonic()

    def write(records: list[ModelRecord]) -> None:
        for record in records:
            record.sweep_id = meta.sweep_id
        store.append_all(records)
        for record in records:
            progress.update(record)

    def settle(record: ModelRecord) -> None:
        record.sweep_id = meta.sweep_id  # before it is cached: a later sweep names this one
        write(reuse.settle(record))

    batch: Iterable[ModelRef] = ()
    executor, interrupted, failed = None, False, False
    try:
        if stream is None:
            # Answered models are written while the catalog is read, never held all at once.
            batch = reuse.plan_into((ref for ref in refs if ref.key not in done), write)
            # The longest checks start first, so the sweep does not end waiting on one.
            batch = longest_first(batch)
            if not quiet and len(batch) < reuse.planned:
                progress.say(f"checks: {len(batch)} to run for {reuse.planned} models (the rest share a check)")
        else:
            batch = reuse.stream(stream.todo(done))
        while batch:
            if executor is None:
                progress.say(starting_line(cfg, len(batch) if isinstance(batch, list) else total - skipped))
                executor = get_executor(cfg)
                progress.watch(getattr(executor, "running", lambda: []))
            executor.run(iter(batch), cfg, check=check or _checker(cfg, spec), on_record=settle)
            batch = reuse.next_round()
    except KeyboardInterrupt:
        interrupted = True
        raise
    except Exception:
        failed = True
        raise
    finally:
        if executor is not None:
            executor.close()
        store.close()
        progress.close(failed=failed)
        learnt: dict[str, Any] = {}
        if stream is not None:
            total, skipped = stream.count, stream.skipped
            source_info = learnt["source"] = dict(stream.describe()) if stream.describe else source_info
            learnt["total"] = total
        if reuse.cache is not None:
            learnt["cache"] = describe_cache(reuse.cache)
            if cfg.output.recheck:
                learnt["cache"].update(recheck=cfg.output.recheck, rechecked=reuse.rechecked,
                                       not_reproduced=reuse.not_reproduced)
        folder.write_meta(meta.finish(time.monotonic() - started, interrupted=interrupted, **learnt))
    if stream is not None and stream.error is not None:
        raise stream.error  # the listing broke off: the records so far are kept, a rerun resumes
    report = _report(out) if write_report else None
    return SweepResult(out, total, progress.done, skipped, report, source_info)


def _say(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


def starting_line(cfg: SweepConfig, models: int) -> str:
    """What happens before the first record (seconds to a minute): said before it starts."""
    checks = f"{models} check{'s' if models != 1 else ''}"
    if cfg.execution.executor == "ray":
        address = cfg.execution.address or os.environ.get("RAY_ADDRESS", "").strip()
        where = f"attaching to Ray at {address}" if address else "starting a private local Ray instance"
        return f"{where}; its workers import torch and transformers before the first of {checks} ..."
    if cfg.execution.executor == "process":
        from sweeper.executors.process import default_workers

        n = min(default_workers(cfg), models) if models else default_workers(cfg)
        return f"starting {n} worker process{'es' if n > 1 else ''} (importing torch and transformers) for {checks} ..."
    return f"running {checks} in this process ..."


def _checker(cfg: SweepConfig, spec: DeviceSpec) -> Check:
    """The real check, imported when a model is about to run (it imports torch); each stage
    it starts is marked in the worker's breadcrumbs, so a crash record names the stage, and
    what a model earned before a stage with a limit of its own reaches the worker's parent."""
    from sweeper.checks.checker import Checker
    from sweeper.executors import breadcrumbs

    return Checker(cfg, spec, on_stage=breadcrumbs.mark, on_earned=breadcrumbs.earned)


def _start_meta(folder: SweepFolder, cfg: SweepConfig, source: dict, device: dict, *, total: int) -> SweepMeta:
    """sweep.json: a resumed sweep keeps its id and start; wall time accumulates."""
    try:
        previous = folder.read_meta()
    except UsageError:  # not JSON (a hand edit, a full disk): the sweep starts afresh
        previous = SweepMeta.missing()
    meta = SweepMeta.begin(previous, config=cfg.to_dict(), source=source, device=device,
                           versions={**versions(), **device.get("tools", {})}, total=total)
    folder.write_meta(meta)
    return meta


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
