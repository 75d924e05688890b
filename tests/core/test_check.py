"""One model through the stages: selected stages bring the ones they need."""

from __future__ import annotations

from sweeper.checks.checker import check_model
from sweeper.records import Status
from sweeper.settings.config import SweepConfig
from sweeper.sources.zoo import zoo_ref


def test_a_selected_stage_runs_after_the_stages_it_needs():
    # A forward runs on the device, so asking for load and forward moves the model too.
    record = check_model(zoo_ref("bert", 1), SweepConfig.of(device="cpu", stages=("load", "forward")))
    assert list(record.stages) == ["load", "to_device", "forward"]
    assert all(r.status is Status.PASS for r in record.stages.values())
    assert record.status is Status.PASS


def test_backward_alone_runs_the_whole_chain_before_it():
    record = check_model(zoo_ref("bert", 1), SweepConfig.of(device="cpu", stages=("backward",)))
    assert list(record.stages) == ["load", "to_device", "forward", "backward"]
    assert record.stages["backward"].status is Status.PASS


def test_backward_alone_still_compares_the_forward_and_gradients_with_the_cpu():
    # The forward runs because backward needs it; it is judged like a selected one.
    record = check_model(zoo_ref("bert", 1), SweepConfig.of(device="trnsim", stages=("backward",)))
    assert record.stages["backward"].status is Status.PASS
    assert {"forward", "backward"} <= set(record.numerics)
    assert record.max_abs_diff is not None


def test_each_stage_is_told_as_it_starts_and_a_sweep_leaves_it_as_a_breadcrumb():
    # A worker that dies mid-stage can only name the stage if it was told before the stage ran.
    cfg = SweepConfig.of(device="cpu", stages=("load", "forward"))
    heard: list[str] = []
    check_model(zoo_ref("bert", 1), cfg, on_stage=heard.append)
    assert heard == ["load", "to_device", "forward"]

    from sweeper import runner
    from sweeper.devices.spec import resolve_device
    from sweeper.executors import breadcrumbs

    breadcrumbs.begin("bert")
    runner._checker(cfg, resolve_device(cfg)[0]).check(zoo_ref("bert", 1))
    assert breadcrumbs.current().stage == "forward"
