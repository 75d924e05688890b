"""Executors say which models run now and in which stage, so the bar moves between records."""

from __future__ import annotations

import threading
import time
from functools import partial

import pytest
from executor_faults import compiling_check, refs

from sweeper.executors.base import get_executor
from sweeper.settings.config import SweepConfig


def _seen_while_running(executor, cfg: SweepConfig) -> list:
    """Poll ``executor.running()`` while it runs two models; every non-empty answer."""
    seen: list = []
    check = partial(compiling_check, compile_s=1.5)
    runner = threading.Thread(target=executor.run, args=(iter(refs("org/a", "org/b")), cfg),
                              kwargs={"check": check, "on_record": lambda r: None})  # fmt: skip
    runner.start()
    try:
        while runner.is_alive():
            found = executor.running()
            if found:
                seen.append(found)
            time.sleep(0.05)
    finally:
        runner.join()
        executor.close()
    return seen


@pytest.mark.parametrize("name", ["inline", "process"])
def test_running_names_the_model_its_stage_and_start(name):
    cfg = SweepConfig.of(executor=name, workers=1, )
    seen = _seen_while_running(get_executor(cfg), cfg)
    stages = {(p.key, p.stage) for found in seen for p in found}
    assert ("org/a", "compile") in stages and ("org/b", "compile") in stages
    assert all(len(found) == 1 and found[0].started for found in seen)


def test_ray_running_reads_the_local_worker_progress(ray_session):
    cfg = SweepConfig.of(executor="ray", workers=1, )
    seen = _seen_while_running(get_executor(cfg), cfg)
    assert ("org/a", "compile") in {(p.key, p.stage) for found in seen for p in found}
