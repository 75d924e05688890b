"""A worker started ahead of time (a Ray actor's) says at once when it cannot load the check."""

from __future__ import annotations

import pytest

from sweeper.executors.slot import WorkerSlot
from sweeper.settings.config import SweepConfig
from tests.executors.executor_faults import ok_check


def test_a_worker_that_cannot_load_its_check_fails_its_start_with_the_reason(tmp_path):
    slot = WorkerSlot(SweepConfig.of(executor="process"), b"not a pickle", workdir=tmp_path)
    slot.start()
    with pytest.raises(RuntimeError, match="before it was ready:.*UnpicklingError"):
        slot.await_ready(60.0)
    assert slot.proc is None  # reaped: a later submit starts a fresh one


def test_a_worker_started_ahead_is_ready_before_its_first_model(tmp_path):
    slot = WorkerSlot(SweepConfig.of(executor="process"), ok_check, workdir=tmp_path)
    try:
        slot.start()
        slot.await_ready(60.0)
        assert slot.ready
    finally:
        slot.close()
