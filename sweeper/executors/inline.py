"""Inline executor: every model in the driver process, one after another (tests, debugging)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

from sweeper.executors.base import CheckFn, OnRecord
from sweeper.records import ModelRef

if TYPE_CHECKING:
    from sweeper.config import SweepConfig


class InlineExecutor:
    """No isolation and no timeout: a crash ends the sweep. Use ``process`` or ``ray`` for real runs."""

    def run(self, refs: Iterable[ModelRef], cfg: SweepConfig, *, check: CheckFn, on_record: OnRecord) -> None:
        for ref in refs:
            on_record(check(ref, cfg))

    def close(self) -> None:
        return None
