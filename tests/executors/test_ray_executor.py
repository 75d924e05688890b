"""Ray executor on real local Ray: small sweep, model faults, infrastructure faults."""

from __future__ import annotations

from functools import partial

import pytest
from executor_faults import (
    FAULTY,
    check_fault_records,
    collect,
    fault_check,
    ok_check,
    refs,
)

from sweeper.executors.ray import RayExecutor
from sweeper.records import ReasonKind, Status
from sweeper.settings.config import SweepConfig
from sweeper.settings.errors import UsageError


def test_small_sweep_streams_every_record_once(ray_session):
    names = [f"org/model-{i}" for i in range(12)]
    cfg = SweepConfig.of(executor="ray", workers=2, worker_max_models=5)
    ex = RayExecutor(cfg)
    got = collect(ex, refs(*names), cfg, ok_check)
    assert sorted(r.model_id for r in got) == sorted(names)
    assert ex.actor_starts == 2  # no actor was lost
    pids = {r.notes["pid"] for r in got}
    assert 2 <= len(pids) <= 6  # reused (12 models) yet recycled every 5 per worker


def test_model_faults_are_records_and_never_retried(ray_session):
    names = ("ok-1", *FAULTY, "ok-2")
    cfg = SweepConfig.of(executor="ray", workers=2, timeout=3, memory_limit_mb=300, retries=2)
    ex = RayExecutor(cfg)
    got = collect(ex, refs(*names), cfg, fault_check)
    assert len(got) == len(names) and {r.model_id for r in got} == set(names)
    check_fault_records({r.model_id: r for r in got})
    assert ex.actor_starts == 2  # a model's crash never takes the Ray worker down
    assert not any("infra_retries" in r.notes for r in got)


def test_lost_worker_is_retried_then_the_model_runs(ray_session, tmp_path):
    cfg = SweepConfig.of(executor="ray", workers=1, retries=1)
    ex = RayExecutor(cfg)
    got = collect(ex, refs("a", "fault/killparent-once-1", "b"), cfg, partial(fault_check, marker_dir=str(tmp_path)))
    by = {r.model_id: r for r in got}
    assert len(got) == 3 and set(by) == {"a", "fault/killparent-once-1", "b"}
    lost = by["fault/killparent-once-1"]
    assert lost.status == Status.PASS and lost.notes["infra_retries"] == 1
    assert ex.actor_starts == 2


def test_lost_worker_beyond_retries_is_one_error_record(ray_session, tmp_path):
    cfg = SweepConfig.of(executor="ray", workers=1, retries=1)
    ex = RayExecutor(cfg)
    got = collect(ex, refs("fault/killparent-always-1", "after"), cfg, partial(fault_check, marker_dir=str(tmp_path)))
    by = {r.model_id: r for r in got}
    assert len(got) == 2
    lost = by["fault/killparent-always-1"]
    assert (lost.status, lost.reason.kind) == (Status.ERROR, ReasonKind.CRASH)
    assert "lost its Ray worker 2 times" in lost.reason.message
    assert by["after"].status == Status.PASS
    assert ex.actor_starts == 3  # the first actor and one per loss


def test_unimportable_check_fails_fast_with_one_line(ray_session):
    cfg = SweepConfig.of(executor="ray", workers=1)
    namespace: dict = {}
    exec("def local_check(ref, cfg):\n    return None\n", namespace)  # noqa: S102 - a function Ray cannot import
    namespace["local_check"].__module__ = "no_such_module_anywhere"
    with pytest.raises(UsageError, match="could not start"):
        collect(RayExecutor(cfg), refs("a"), cfg, namespace["local_check"])


def test_models_run_on_the_actors_that_are_up_while_others_wait_for_resources(ray_session):
    cfg = SweepConfig.of(executor="ray", workers=3, num_cpus=1.0)  # the local cluster fits two
    ex = RayExecutor(cfg)
    got = collect(ex, refs(*[f"m{i}" for i in range(6)]), cfg, ok_check)
    assert sorted(r.model_id for r in got) == [f"m{i}" for i in range(6)]
    assert all(r.status == Status.PASS for r in got)
    assert len({r.notes["pid"] for r in got}) <= 2
