"""The executor plug point: map ``check_model`` over refs, hand each record back.

An executor never writes the store: it calls ``on_record`` in the driver for every ref it
was given (a crash, timeout or lost worker still yields a record), and the driver writes.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Protocol

from sweeper.errors import UsageError
from sweeper.records import ModelRecord, ModelRef, Reason, ReasonKind, Status, base_record

if TYPE_CHECKING:
    from sweeper.config import SweepConfig

CheckFn = Callable[[ModelRef, "SweepConfig"], ModelRecord]
OnRecord = Callable[[ModelRecord], None]


class Executor(Protocol):
    """Runs ``check`` for each ref (in any order) and calls ``on_record`` once per ref."""

    def run(self, refs: Iterable[ModelRef], cfg: SweepConfig, *, check: CheckFn, on_record: OnRecord) -> None: ...

    def close(self) -> None: ...


def failure_record(
    ref: ModelRef,
    cfg: SweepConfig,
    *,
    status: Status,
    kind: ReasonKind,
    message: str,
    stage: str | None = None,
    sweep_id: str = "",
) -> ModelRecord:
    """The record for a model whose worker crashed, hung or ran out of memory."""
    from sweeper.origins import on_host
    from sweeper.repro import repro_command

    reason = on_host(Reason(kind=kind, message=message, stage=stage), upstream_fails=False)
    record = base_record(ref, sweep_id=sweep_id, device=cfg.device, status=status, weights=cfg.weights, dtype=cfg.dtype)
    record.reason = reason
    record.blockers = [reason]
    record.repro = repro_command(ref, cfg)
    if stage:
        record.notes["stage"] = stage
    return record


def get_executor(cfg: SweepConfig) -> Executor:
    """The executor the config names."""
    if cfg.executor == "inline":
        from sweeper.executors.inline import InlineExecutor

        return InlineExecutor()
    if cfg.executor == "process":
        from sweeper.executors.process import ProcessExecutor

        return ProcessExecutor(cfg)
    if cfg.executor == "ray":
        from sweeper.executors.ray import RayExecutor

        return RayExecutor(cfg)
    raise UsageError(f"unknown executor {cfg.executor!r}")
