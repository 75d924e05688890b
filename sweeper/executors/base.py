"""The executor plug point: run each ref's check, hand each record back.

An executor never writes the store: it calls ``on_record`` in the driver for every ref it
was given (a crash, timeout or lost worker still yields a record), and the driver writes
(and stamps each record with the sweep's id).

Which names exist and where each executor is built: ``sweeper.executors.registry``
(imports none of them; a plugin registers with ``register_executor``).

What an executor runs is a ``Check``: ``setup()`` once per worker process, ``check(ref)``
per model, ``between_models()`` after each (``sweeper.checks.checker.Checker`` is the real one).
A plain function ``fn(ref, cfg)`` (a test double, a benchmark's) is wrapped by ``as_check``.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from sweeper.executors.registry import executor_factory, register_executor
from sweeper.records import ModelRecord, ModelRef, Origin, Reason, ReasonKind, Status, base_record
from sweeper.settings.errors import UsageError

if TYPE_CHECKING:
    from sweeper.settings.config import SweepConfig

__all__ = ["Check", "CheckFn", "Executor", "FunctionCheck", "as_check", "failure_record", "get_executor", "register_executor"]

CheckFn = Callable[[ModelRef, "SweepConfig"], ModelRecord]
OnRecord = Callable[[ModelRecord], None]


class Check(Protocol):
    """One sweep's check, set up once per process that runs it."""

    def setup(self) -> Any: ...

    def check(self, ref: ModelRef) -> ModelRecord: ...

    def between_models(self) -> None: ...


@dataclass
class FunctionCheck:
    """A plain ``fn(ref, cfg)`` as a ``Check`` (nothing to set up or reset)."""

    fn: CheckFn
    cfg: SweepConfig

    def setup(self) -> FunctionCheck:
        return self

    def check(self, ref: ModelRef) -> ModelRecord:
        return self.fn(ref, self.cfg)

    def between_models(self) -> None:
        return None


def as_check(check: Check | CheckFn, cfg: SweepConfig) -> Check:
    """``check`` as a ``Check``: a ``Checker`` as is, a plain function wrapped."""
    return check if hasattr(check, "between_models") else FunctionCheck(check, cfg)  # type: ignore[arg-type,return-value]


class Executor(Protocol):
    """Runs ``check`` for each ref (in any order) and calls ``on_record`` once per ref."""

    def run(self, refs: Iterable[ModelRef], cfg: SweepConfig, *, check: Check | CheckFn, on_record: OnRecord) -> None: ...

    def close(self) -> None: ...


def failure_record(
    ref: ModelRef,
    cfg: SweepConfig,
    *,
    status: Status,
    kind: ReasonKind,
    message: str,
    stage: str | None = None,
    infrastructure: bool = False,
) -> ModelRecord:
    """The record for a model whose worker crashed, hung or ran out of memory.

    ``infrastructure`` marks a failure that says nothing about the model (a lost Ray
    worker, a check that raised): no other model's record is copied from it, and it is
    never the device's (ours: the harness's).
    """
    from sweeper.checks.origins import on_host
    from sweeper.checks.repro import repro_command

    reason = on_host(Reason(kind=kind, message=message, stage=stage), upstream_fails=False)
    if infrastructure:
        reason = dataclasses.replace(reason, origin=Origin.HARNESS)
    record = base_record(ref, sweep_id="", device=cfg.device.spec, status=status, weights=cfg.materialise.weights, dtype=cfg.device.dtype)
    record.reason = reason
    record.blockers = [reason]
    record.repro = repro_command(ref, cfg)
    if stage:
        record.notes["stage"] = stage
    if infrastructure:
        record.notes["infrastructure"] = True
    return record.settle()


def settle_executor(cfg: SweepConfig, say: Callable[[str], None]) -> SweepConfig:
    """``cfg`` with an executor this environment has: Ray is an extra (``sweeper[ray]``),
    and a device's own environment may lack it. Without Ray a local sweep runs with the
    process executor, saying so; joining a cluster (``--address``) cannot, and says what to do."""
    if cfg.execution.executor != "ray" or ray_installed():
        return cfg
    if cfg.execution.address or os.environ.get("RAY_ADDRESS", "").strip():
        raise UsageError("Ray is not installed in this environment, and joining a cluster needs it: "
                         "pip install 'sweeper[ray]', or sweep on this machine with --executor process")
    say("sweep: Ray is not installed in this environment; sweeping with --executor process "
        "(pip install 'sweeper[ray]' for the Ray executor)")
    return cfg.replace(executor="process")


def ray_installed() -> bool:
    """Whether ``import ray`` works here (a broken or blocked Ray counts as missing)."""
    try:
        import ray  # noqa: F401
    except ImportError:
        return False
    return True


def get_executor(cfg: SweepConfig) -> Executor:
    """The executor the config names (see ``sweeper.executors.registry``)."""
    return executor_factory(cfg.execution.executor)(cfg)
