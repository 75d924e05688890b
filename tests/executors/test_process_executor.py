"""Process executor with real worker processes: each fault costs exactly one record."""

from __future__ import annotations

from executor_faults import (
    FAULTY,
    check_fault_records,
    collect,
    fault_check,
    ok_check,
    refs,
)

from sweeper.executors.process import ProcessExecutor
from sweeper.records import Status
from sweeper.settings.config import SweepConfig


def _by_id(records):
    assert len(records) == len({r.key for r in records}), "a ref got more than one record"
    return {r.model_id: r for r in records}


def test_faults_cost_one_record_each_and_the_sweep_goes_on():
    names = ("ok-1", *FAULTY, "ok-2", "ok-3")
    cfg = SweepConfig.of(timeout=3, workers=2, memory_limit_mb=300)
    got = _by_id(collect(ProcessExecutor(cfg), refs(*names), cfg, fault_check))
    assert set(got) == set(names)
    check_fault_records(got)


def test_a_worker_stopped_in_the_shapes_stage_keeps_what_the_model_earned():
    """--timeout kills a worker that hangs in the shapes stage (past its own limit, in code
    no alarm interrupts): the model's load through compile verdicts stand and only the
    shapes stage is a timeout; after an earlier failure the model stays a timeout record,
    with the stages it ran."""
    cfg = SweepConfig.of(timeout=4, workers=2)
    got = _by_id(collect(ProcessExecutor(cfg), refs("fault/hangshapes-1", "fault/hangshapesafterfail-1"), cfg,
                         fault_check))
    kept = got["fault/hangshapes-1"]
    assert (kept.status, kept.outcome.value, kept.blockers) == (Status.PASS, "pass", [])
    assert kept.architecture == "Tagger" and kept.notes["earned"] is True
    assert [kept.stages[s].status for s in ("load", "to_device", "forward", "backward", "compile")] == [Status.PASS] * 5
    assert kept.stages["shapes"].status is Status.TIMEOUT and "--timeout" in kept.stages["shapes"].reason.message
    assert kept.shapes["verdict"] == "timeout" and "shapes stage" in kept.notes["stage_timeout"]
    assert kept.seconds >= 4
    failed = got["fault/hangshapesafterfail-1"]
    assert failed.status is Status.TIMEOUT and failed.reason.stage == "shapes"
    assert failed.stages["forward"].status is Status.FAIL and failed.stages["compile"].status is Status.PASS
    assert failed.stages["shapes"].status is Status.TIMEOUT


def test_workers_are_reused_then_recycled_every_n_models():
    cfg = SweepConfig.of(workers=1, worker_max_models=3)
    got = collect(ProcessExecutor(cfg), refs(*[f"m{i}" for i in range(7)]), cfg, ok_check)
    pids = [r.notes["pid"] for r in sorted(got, key=lambda r: r.rank)]
    assert pids[0] == pids[1] == pids[2] != pids[3] == pids[4] == pids[5] != pids[6]


def test_a_crash_recycles_the_worker_and_a_leaked_patch_does_too():
    cfg = SweepConfig.of(workers=1, worker_max_models=50)
    got = collect(ProcessExecutor(cfg), refs("a", "fault/patch-1", "b", "fault/segfault-1", "c"), cfg, fault_check)
    by = {r.model_id: r for r in got}
    assert by["a"].notes["pid"] == by["fault/patch-1"].notes["pid"] != by["b"].notes["pid"]
    assert "builtins.print" in by["fault/patch-1"].notes["worker_recycled"]
    assert by["b"].notes["pid"] != by["c"].notes["pid"]


def test_torch_globals_are_restored_between_models():
    num_cpus = 2.0  # threads follow --num-cpus; the model sets 3
    cfg = SweepConfig.of(workers=1, num_cpus=num_cpus, timeout=120)
    got = collect(ProcessExecutor(cfg), refs("fault/torchglobals-1", "after"), cfg, fault_check)
    by = {r.model_id: r for r in got}
    assert by["after"].notes["pid"] == by["fault/torchglobals-1"].notes["pid"]
    assert by["after"].notes["torch"] == {"dtype": "torch.float32", "grad": True, "threads": int(num_cpus)}


def test_a_model_registering_a_device_gets_the_worker_recycled():
    cfg = SweepConfig.of(workers=1, timeout=120)
    got = collect(ProcessExecutor(cfg), refs("fault/registerdevice-1", "after"), cfg, fault_check)
    by = {r.model_id: r for r in got}
    assert "privateuse1" in by["fault/registerdevice-1"].notes["worker_recycled"]
    assert by["after"].notes["pid"] != by["fault/registerdevice-1"].notes["pid"]


def test_refs_are_pulled_only_as_workers_free_up():
    pulled: list[str] = []
    lead: list[int] = []

    def lazy():
        for ref in refs(*[f"m{i}" for i in range(20)]):
            pulled.append(ref.key)
            yield ref

    cfg = SweepConfig.of(workers=2)
    ex = ProcessExecutor(cfg)
    try:
        ex.run(lazy(), cfg, check=ok_check, on_record=lambda r: lead.append(len(pulled) - len(lead)))
    finally:
        ex.close()
    assert len(lead) == 20 and max(lead) <= 2  # never more refs out than workers
