"""Do each distinct check once: group a sweep's refs by fingerprint, run one per group.

The driver asks ``Reuse.plan_into`` which refs to run: the first ref (in rank order) of
each fingerprint not already answered (answered ones are written as the refs are read).
Answers come from records of the same sweep folder (a resumed sweep, one per fingerprint),
from ``--cache``, or from the representative's record once it comes back
(``settle``): every other ref of its group then gets a copy of it under its own identity
(model id, key, rank, downloads, pipeline tag, repro, ...) with ``reused_from`` naming the
model that ran. Every model still gets exactly one record.

A representative that crashed, timed out or ran out of memory answers for its group too:
it is the same build on the same device, so the others would do the same (and a timeout
repeated per model would cost the timeout each time). Only infrastructure failures (a lost
Ray worker, a check that raised; ``notes.infrastructure``) answer for nobody: the next ref
of the group runs in the next round.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sweeper.libraries.registry import library_name_of
from sweeper.records import ModelRecord, ModelRef, Reason
from sweeper.redact import redact_obj
from sweeper.storage import recheck
from sweeper.storage.cache import ResultCache

# Notes that describe one worker's run, not the check's outcome.
RUN_NOTES = ("infra_retries", "worker_recycled", recheck.NOTE)
Fingerprint = Callable[[ModelRef], str]

if TYPE_CHECKING:
    from sweeper.settings.config import SweepConfig


def reusable(record: ModelRecord) -> bool:
    """Whether ``record`` can answer for other refs with its fingerprint."""
    return not record.notes.get("infrastructure")


# What a copy has of its own; everything else it shares with the record it copies.
OWN_FIELDS = (
    "sweep_id", "model_id", "key", "rank", "downloads", "revision", "pipeline_tag", "library_name", "model_type",
    "architecture", "repro", "reused_from", "seconds", "notes",
)  # fmt: skip


class ReusedRecord(ModelRecord):
    """A copy of another model's record that serialises from that record's dict: only its
    own fields (``OWN_FIELDS``) are converted and redacted per copy, which is what keeps a
    100,000-model sweep's driver cheap when most models reuse a check."""

    _outcome: dict[str, Any] | None = None  # the copied record's ``to_dict()``

    def to_dict(self) -> dict[str, Any]:
        if self._outcome is None:
            return super().to_dict()
        data = dict(self._outcome)
        data.update(redact_obj({name: getattr(self, name) for name in OWN_FIELDS}))
        data["seconds"] = round(self.seconds, 4)
        return data


def copy_for(record: ModelRecord, ref: ModelRef, *, repro: str, outcome: dict[str, Any] | None = None) -> ModelRecord:
    """``record``'s outcome under ``ref``'s identity; ``reused_from`` names the model that ran.

    ``outcome``, ``record.to_dict()`` when the caller keeps it for many copies, spares
    serialising the shared parts again for each.
    """
    # A shallow copy: the outcome's parts (stages, reasons, numerics, ...) are shared with
    # ``record`` and never changed once a record is settled; what differs is set here.
    new = ReusedRecord.__new__(ReusedRecord)
    new.__dict__.update(record.__dict__)
    new.__dict__.pop("_outcome", None)
    new.model_id, new.key, new.rank, new.downloads = ref.model_id, ref.key, ref.rank, ref.downloads
    new.revision, new.pipeline_tag, new.library_name = ref.revision, ref.pipeline_tag, library_name_of(ref)
    new.model_type = ref.model_type or record.model_type
    new.architecture = record.architecture or ref.architecture
    new.repro = repro
    new.reused_from = record.reused_from or record.model_id
    new.seconds = 0.0  # this model cost nothing; the stages keep the check's own timings
    new.notes = {k: v for k, v in record.notes.items() if k not in RUN_NOTES}
    renamed = bool(record.model_id) and record.model_id != ref.model_id and _rename(new, record.model_id, ref.model_id)
    if outcome is not None and not renamed:
        new._outcome = outcome
    return new


def _rename(record: ModelRecord, old: str, new: str) -> bool:
    """Messages that name the model that ran (``X needs trust_remote_code``) name this one;
    returns whether any did."""
    reasons = [record.reason, *record.blockers, *(v.reason for v in record.stages.values())]
    if not any(r is not None and old in r.message for r in reasons):
        return False

    def fix(reason: Reason | None) -> Reason | None:
        if reason is None or old not in reason.message:
            return reason
        return dataclasses.replace(reason, message=reason.message.replace(old, new))

    record.reason = fix(record.reason)
    record.blockers = [b for b in (fix(b) for b in record.blockers) if b is not None]
    record.stages = {k: dataclasses.replace(v, reason=fix(v.reason)) for k, v in record.stages.items()}
    return True


class Reuse:
    """One sweep's bookkeeping: fingerprints, answers by fingerprint, refs waiting for one."""

    def __init__(
        self,
        fingerprint: Fingerprint,
        *,
        repro: Callable[[ModelRef], str],
        enabled: bool = True,
        known: Iterable[ModelRecord] = (),
        cache: ResultCache | None = None,
        cacheable: Callable[[ModelRef], bool] = lambda ref: True,
        explain: Callable[[ModelRef], dict[str, str]] | None = None,
        recheck: Callable[[str], bool] = lambda fp: False,
    ) -> None:
        self.fingerprint = fingerprint
        self.repro = repro
        self.enabled = enabled
        self.cache = cache
        self.cacheable = cacheable
        self.explain = explain  # the fingerprint's parts, noted on each record that ran
        self.fp_of: dict[str, str] = {}  # ref key -> fingerprint, for the refs in flight
        self.planned = 0  # refs planned so far
        self.answers: dict[str, ModelRecord] = {}
        self.waiting: dict[str, list[ModelRef]] = {}  # fingerprint -> refs waiting for its answer
        self.running: dict[str, ModelRef] = {}  # ref key -> the representative in flight
        # id(answer) -> (answer, its to_dict()): serialised once for all its copies
        self._outcomes: dict[int, tuple[ModelRecord, dict[str, Any]]] = {}
        # ``--recheck``: which cache hits run again; fingerprint -> the cached record, while its run is out
        self.recheck = recheck
        self.rechecking: dict[str, ModelRecord] = {}
        self.rechecked = self.not_reproduced = 0
        if enabled:
            for record in known:
                fp = record.notes.get("fingerprint")
                if fp and reusable(record):
                    self.answers.setdefault(fp, record)

    def plan(self, refs: Iterable[ModelRef]) -> tuple[list[ModelRef], list[ModelRecord]]:
        """(refs to run now, records already answered); the rest wait for a representative."""
        ready: list[ModelRecord] = []
        return self.plan_into(refs, ready.extend), ready

    def plan_into(self, refs: Iterable[ModelRef], emit: Callable[[list[ModelRecord]], None], *, chunk: int = 1000) -> list[ModelRef]:
        """The refs to run now; records already answered go to ``emit`` in chunks as the
        refs are read, so a sweep of any size never holds them all."""
        run: list[ModelRef] = []
        ready: list[ModelRecord] = []
        for ref in refs:
            fp = self.fingerprint(ref)
            self.planned += 1
            answer = self._answer(fp) if self.enabled else None
            if answer is not None:
                ready.append(self._copy(answer, ref))
                if len(ready) >= chunk:
                    emit(ready)
                    ready = []
            elif self.enabled and fp in self.waiting:
                self.waiting[fp].append(ref)
            else:
                if self.enabled:
                    self.waiting[fp] = []
                self.fp_of[ref.key] = fp
                run.append(ref)
        if ready:
            emit(ready)
        self.running.update((ref.key, ref) for ref in run)
        return run

    def stream(self, refs: Iterable[ModelRef]) -> Iterator[ModelRef]:
        """Refs of a listing that streams while the sweep runs: each is fingerprinted as it
        is pulled and runs (grouping would have to hold the listing back)."""
        for ref in refs:
            self.fp_of[ref.key] = self.fingerprint(ref)
            self.running[ref.key] = ref
            yield ref

    def _answer(self, fp: str) -> ModelRecord | None:
        if fp not in self.answers and self.cache is not None and fp not in self.rechecking:
            cached = self.cache.get(fp)
            if cached is not None:
                cached.notes["cached_from_sweep"] = cached.sweep_id
                if self.recheck(fp):  # run it again; its record will say whether the verdict came back
                    self.rechecking[fp] = cached
                    return None
                self.answers[fp] = cached
        return self.answers.get(fp)

    def _copy(self, record: ModelRecord, ref: ModelRef) -> ModelRecord:
        held = self._outcomes.get(id(record))
        if held is None or held[0] is not record:
            held = self._outcomes[id(record)] = (record, record.to_dict())
        return copy_for(record, ref, repro=self.repro(ref), outcome=held[1])

    def settle(self, record: ModelRecord) -> list[ModelRecord]:
        """A record came back: it and the copies it answers for, to be written in order."""
        fp = self.fp_of.pop(record.key, None)
        ref = self.running.pop(record.key, None)
        if not fp:
            return [record]
        record.notes["fingerprint"] = fp
        cached = self.rechecking.pop(fp, None) if reusable(record) else None
        if cached is not None:
            record.notes[recheck.NOTE] = found = recheck.note(cached, record)
            self.rechecked += 1
            self.not_reproduced += not found["reproduced"]
        if ref is not None and self.explain is not None:
            record.notes["fingerprint_parts"] = self.explain(ref)
        if ref is not None and self.cache is not None and reusable(record) and self.cacheable(ref):
            self.cache.put(fp, record)
        if not self.enabled or not reusable(record):
            return [record]
        self.answers.setdefault(fp, record)
        return [record, *(self._copy(record, r) for r in self.waiting.pop(fp, []))]

    def next_round(self) -> list[ModelRef]:
        """Representatives for groups left unanswered (their first one failed for
        infrastructure reasons): empty when every ref has its record."""
        run = []
        in_flight = set(self.fp_of.values())
        for fp, refs in list(self.waiting.items()):
            if refs and fp not in in_flight:
                ref = refs.pop(0)
                self.fp_of[ref.key] = fp
                run.append(ref)
            if not refs:
                del self.waiting[fp]
        self.running.update((ref.key, ref) for ref in run)
        return run


def known_answers(out_dir: Path) -> Iterator[ModelRecord]:
    """One record per fingerprint from a sweep folder's records (what a resumed sweep
    copies from), read as a stream: a 100,000-record folder is never held whole."""
    from sweeper.storage.folder import SweepFolder
    from sweeper.storage.store import iter_raw

    seen: set[str] = set()
    for raw in iter_raw(SweepFolder(out_dir).records):
        notes = raw.get("notes") if isinstance(raw.get("notes"), dict) else {}
        fp = notes.get("fingerprint")
        if fp and fp not in seen and not notes.get("infrastructure"):
            try:
                record = ModelRecord.from_dict(raw)
            except (ValueError, KeyError, TypeError):  # a line this version cannot read answers nothing
                continue
            seen.add(fp)
            yield record


def for_sweep(cfg: SweepConfig, device_info: dict, *, known: Iterable[ModelRecord], fingerprinted: bool) -> Reuse:
    """The sweep's ``Reuse``: sharing per ``cfg.output.reuse``, ``--cache`` when given (with
    ``--no-reuse`` the cache is written, never read: a refresh).

    ``fingerprinted`` is False for a check other than ``check_model`` (a test's, a
    plugin's): the fingerprint does not describe its outcome, so nothing is shared, cached
    or fingerprinted.
    """
    from sweeper.checks.repro import repro_command
    from sweeper.storage.fingerprint import Fingerprinter

    if not fingerprinted:
        return Reuse(lambda ref: "", repro=lambda ref: repro_command(ref, cfg), enabled=False)
    fingerprinter = Fingerprinter(cfg, device_info)
    cache = ResultCache(cfg.output.cache) if cfg.output.cache else None
    percent, seed = cfg.output.recheck, cfg.materialise.seed
    return Reuse(
        fingerprinter, repro=lambda ref: repro_command(ref, cfg), enabled=cfg.output.reuse,
        known=known if cfg.output.reuse else (), cache=cache, cacheable=fingerprinter.cacheable,
        explain=fingerprinter.parts, recheck=lambda fp: recheck.chosen(fp, percent=percent, seed=seed),
    )
