"""Inline executor: every model in the driver process, one after another (tests, debugging)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

from sweeper.executors import breadcrumbs
from sweeper.executors.base import Check, CheckFn, OnRecord, as_check
from sweeper.records import ModelRef

if TYPE_CHECKING:
    from sweeper.settings.config import SweepConfig


class InlineExecutor:
    """No isolation and no timeout: a crash ends the sweep. Use ``process`` or ``ray`` for real runs."""

    def __init__(self, cfg: SweepConfig | None = None) -> None:
        self.current: str | None = None

    def run(self, refs: Iterable[ModelRef], cfg: SweepConfig, *, check: Check | CheckFn, on_record: OnRecord) -> None:
        checker = as_check(check, cfg).setup()
        for ref in refs:
            breadcrumbs.begin(ref.key)
            self.current = ref.key
            try:
                record = checker.check(ref)
            finally:
                self.current = None
            on_record(record)

    def running(self) -> list[breadcrumbs.Breadcrumb]:
        """The model being checked (its stage as ``check_model`` marks it)."""
        found = breadcrumbs.current()
        return [found] if self.current is not None and found.key == self.current else []

    def close(self) -> None:
        return None
