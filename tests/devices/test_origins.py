"""Whose a blocker is: each origin injected into one model, and the record's verdict.

A blocker is the device's only when the CPU control passes (or the profile declares it);
what fails on the CPU too is the harness's, or the model's when its unshrunk config fails
the same way; a lowering tool's failure stays the tool's.
"""

from __future__ import annotations

from typing import Any

import pytest
import torch

from sweeper.checks import stages
from sweeper.checks.checker import check_model
from sweeper.libraries.transformers import Built
from sweeper.records import ModelRef, Origin, ReasonKind, Status
from sweeper.settings.config import SweepConfig
from sweeper.settings.errors import SweeperError


class LoweringToolFailure(SweeperError):
    """What a lowering tool raises for an op the device supports."""

    reason_kind = ReasonKind.LOWERING_TOOL_ERROR


# The CPU runs load makes before the device's: the output's reference (eval mode) and the
# gradients' (a training step).
REFERENCE_RUNS = 2


class Tiny(torch.nn.Module):
    """A linear layer, plus one injected fault in its forward."""

    def __init__(self, fault: str, *, rebuilt: bool = False) -> None:
        super().__init__()
        self.fault = fault
        self.calls = 0
        self.rebuilt = rebuilt  # built again (the CPU control): its first calls are no reference runs
        self.cache: torch.Tensor | None = None
        self.linear = torch.nn.Linear(4, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        self.calls += 1
        y = self.linear(x)
        on_device = y.device.type != "cpu"
        if self.fault == "device_dtype":
            y = y + y.double().sum().float()  # float64: the profile refuses it on the device
        elif self.fault == "lowering_tool" and on_device:
            raise LoweringToolFailure("failed to legalize operation 'torch.aten.native_op'", op="aten::native_op")
        elif self.fault in ("input_rule", "model_bug") and (self.calls > REFERENCE_RUNS or self.rebuilt):  # after the CPU references in load
            raise ValueError("Expected input batch_size (2) to match target batch_size (3)")
        elif self.fault in ("device_cache", "global_cache"):
            # A tensor made once, on whatever device the first run after load used, and
            # reused: an attribute of the model (gone with a fresh build), or module state.
            cached = self.cache if self.fault == "device_cache" else _GLOBAL_CACHE.get("t")
            if cached is None and self.calls > REFERENCE_RUNS:
                cached = torch.ones(4, device=y.device)
                self.cache = cached
                _GLOBAL_CACHE["t"] = cached
            if cached is not None and cached.device != y.device:  # what a CPU kernel says of a trnsim tensor
                raise RuntimeError("Expected all tensors to be on the same device, but found at least two "
                                   f"devices, {y.device} and {cached.device}!")
            y = y + cached if cached is not None else y
            if on_device:
                raise RuntimeError("kernel launch failed")  # nothing recognises it: the control must place it
        elif self.fault == "declared_and_model_bug":
            y = y + y.double().sum().float()  # refused by the profile on the device (recorded, run on)
            if self.calls > REFERENCE_RUNS or self.rebuilt:  # after the CPU references in load, on any device
                raise ValueError("Expected input batch_size (2) to match target batch_size (3)")
        return y


_GLOBAL_CACHE: dict[str, torch.Tensor] = {}


def _check(monkeypatch: pytest.MonkeyPatch, fault: str, *, upstream_fails: bool = False, **cfg: Any):
    builds = []

    def build(ref: ModelRef, _cfg: SweepConfig) -> Built:
        torch.manual_seed(0)
        builds.append(_cfg.device.spec)
        notes = {"upstream_control": "the unshrunk config fails the same way on meta"} if upstream_fails else {}
        return Built(model=Tiny(fault, rebuilt=len(builds) > 1), inputs={"x": torch.randn(2, 4)}, architecture="Tiny", model_type="tiny",
                     num_parameters=20, notes=notes)  # fmt: skip

    monkeypatch.setattr(stages, "build_model", build)
    settings = {"device": "trnsim", "executor": "inline", "stages": ("load", "to_device", "forward", "backward"), **cfg}
    return check_model(ModelRef(model_id=f"test/{fault}", rank=1), SweepConfig.of(**settings))


def test_a_device_refusal_is_the_devices_and_needs_no_control(trnsim, monkeypatch):
    record = _check(monkeypatch, "device_dtype")
    assert record.reason.kind is ReasonKind.UNSUPPORTED_DTYPE
    assert record.reason.origin is Origin.DEVICE and record.reason.stage == "forward"
    assert record.control is None  # the profile's declaration proves it


def test_a_lowering_tool_failure_stays_the_tools(trnsim, monkeypatch):
    record = _check(monkeypatch, "lowering_tool")
    assert record.reason.kind is ReasonKind.LOWERING_TOOL_ERROR and record.reason.op == "aten::native_op"
    assert record.reason.origin is Origin.LOWERING_TOOL
    assert record.control is None


def test_a_failure_the_cpu_repeats_is_the_harness(trnsim, monkeypatch):
    record = _check(monkeypatch, "input_rule")
    assert record.stages["forward"].status is Status.FAIL
    assert record.reason.origin is Origin.HARNESS
    assert record.stages["forward"].reason.origin is Origin.HARNESS
    assert record.control["status"] == "fail" and record.control["stage"] == "forward"
    assert record.control["reason"]["kind"] == record.reason.kind.value


def test_a_failure_the_unshrunk_config_repeats_is_the_models(trnsim, monkeypatch):
    record = _check(monkeypatch, "model_bug", upstream_fails=True)
    assert record.reason.origin is Origin.MODEL
    assert record.control["status"] == "fail"


def test_a_stage_that_recorded_a_blocker_fails(trnsim, monkeypatch):
    # With --collect-all the refusal is recorded and the forward runs on: the stage still
    # fails with its blocker, and the backward after it still runs.
    record = _check(monkeypatch, "device_dtype", collect_all=True)
    forward = record.stages["forward"]
    assert forward.status is Status.FAIL and forward.reason.kind is ReasonKind.UNSUPPORTED_DTYPE
    assert record.stages["backward"].status is not Status.BLOCKED
    for name, result in record.stages.items():
        assert (result.status is Status.PASS) == (not any(b.stage == name for b in record.blockers)), name


def test_a_passing_model_pays_for_no_control(trnsim, monkeypatch):
    record = _check(monkeypatch, "none")
    assert record.status is Status.PASS and record.control is None


def test_the_control_builds_its_own_model_on_the_cpu(trnsim, monkeypatch):
    """kyutai/mimi: a tensor the device run cached on the model met the control's CPU
    tensors, the control failed, and the device's failures became the harness's.
    The control builds the model afresh on the CPU: nothing of the device run is in it."""
    record = _check(monkeypatch, "device_cache")
    assert record.control["status"] == "pass", record.control
    assert record.reason.origin is Origin.DEVICE, record.reason


def test_a_control_that_meets_device_tensors_is_our_bug_and_changes_no_blocker(trnsim, monkeypatch):
    _GLOBAL_CACHE.clear()
    try:
        unplaced = _check(monkeypatch, "global_cache").blockers[0]
        _GLOBAL_CACHE.clear()
        record = _check(monkeypatch, "global_cache")
    finally:
        _GLOBAL_CACHE.clear()
    assert record.control["status"] == "fail" and "trnsim" in record.control["reason"]["message"]
    assert record.reason.kind is unplaced.kind and record.reason.origin is unplaced.origin
    assert record.stages["forward"].reason.origin is unplaced.origin
    leak = record.blockers[-1]
    assert (leak.kind, leak.origin, leak.stage) == (ReasonKind.HARNESS, Origin.HARNESS, "forward")
    assert leak.message.startswith("CPU control met device tensors")


def test_a_declared_gap_stays_the_devices_when_the_control_fails_for_another_reason(trnsim, monkeypatch):
    # --collect-all: the refusal is recorded, the forward runs on and fails for the model's
    # own reason; that failure needs the control, which fails on the CPU too.
    record = _check(monkeypatch, "declared_and_model_bug", collect_all=True)
    assert record.control["status"] == "fail"
    assert record.reason.kind is ReasonKind.UNSUPPORTED_DTYPE and record.reason.origin is Origin.DEVICE
    assert any(b.kind is not ReasonKind.UNSUPPORTED_DTYPE and b.origin is Origin.HARNESS for b in record.blockers)
    finding = record.blockers[-1]
    assert finding.origin is Origin.HARNESS and finding.message.startswith("CPU control failed too")


def test_the_control_of_a_worker_overrun_reruns_the_stage_on_the_cpu(trnsim, monkeypatch):
    """What a fresh worker runs after a device stage crashed, hung or ran out of memory."""
    from sweeper.checks.checker import Checker

    seen = []

    def build(ref: ModelRef, cfg: SweepConfig) -> Built:
        seen.append(cfg.device.spec)
        return Built(model=Tiny(ref.model_id.split("/")[1], rebuilt=True), inputs={"x": torch.randn(2, 4)}, architecture="Tiny",
                     model_type="tiny", num_parameters=20)  # fmt: skip

    monkeypatch.setattr(stages, "build_model", build)
    checker = Checker.for_settings(SweepConfig.of(device="trnsim", executor="inline"))
    passed = checker.control(ModelRef(model_id="test/none", rank=1), "backward")
    assert passed["status"] == "pass" and passed["stage"] == "backward" and seen == ["cpu"]
    failed = checker.control(ModelRef(model_id="test/model_bug", rank=1), "forward")
    assert failed["status"] == "fail" and "batch_size" in failed["reason"]["message"]
