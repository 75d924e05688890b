"""Numerics as typed fields, and the CPU reference's own noise.

Which stage and tensor went past the tolerance is a field of the record
(``numerics.over``: stage, tensor); a gap within a small multiple of the CPU reference's
own noise is recorded as ``numerics.within_noise`` and is not a failure: the noise of two
CPU runs, or (float32) the CPU reference's own rounding, measured against a float64 run.
"""

from __future__ import annotations

from typing import Any

import pytest
import torch
from trnsim_helpers import DeviceSkewedGrad

from sweeper.checks import stages
from sweeper.checks.checker import check_model
from sweeper.checks.selfnoise import NOISE_MULTIPLIER
from sweeper.libraries.transformers import Built
from sweeper.records import ModelRecord, ModelRef, ReasonKind, Status
from sweeper.settings.config import SweepConfig

CALLS = {"backward": 0}


class JitteryGrad(torch.autograd.Function):
    """Identity whose backward drifts a little with every call, on any device: kernels whose
    reduction order varies from run to run (the CPU's two runs differ too)."""

    @staticmethod
    def forward(ctx: Any, x: torch.Tensor) -> torch.Tensor:
        return x.clone()

    @staticmethod
    def backward(ctx: Any, grad: torch.Tensor) -> torch.Tensor:
        CALLS["backward"] += 1
        return grad * (1 + 0.05 * CALLS["backward"])


class Net(torch.nn.Module):
    def __init__(self, fn: Any) -> None:
        super().__init__()
        torch.manual_seed(0)
        self.first = torch.nn.Linear(8, 8)
        self.second = torch.nn.Linear(8, 8)
        self.fn = fn

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.second(self.fn(self.first(x)))


def _run(monkeypatch: pytest.MonkeyPatch, fn: Any) -> ModelRecord:
    CALLS["backward"] = 0
    torch.manual_seed(1)
    inputs = {"x": torch.randn(4, 8)}
    monkeypatch.setattr(stages, "build_model", lambda ref, cfg: Built(model=Net(fn).eval(), inputs=dict(inputs),
                                                                        architecture="Net", model_type="net",
                                                                        num_parameters=144))  # fmt: skip
    return check_model(ModelRef(model_id="test/net", rank=1), SweepConfig.of(device="trnsim", stages=("backward",)))


def test_a_gradient_gap_within_the_cpus_own_noise_is_not_a_failure(trnsim, monkeypatch):
    record = _run(monkeypatch, JitteryGrad.apply)
    assert record.status is Status.PASS, record.reason
    noise = record.numerics["within_noise"]
    assert (noise["stage"], noise["tensor"], noise["within"]) == ("backward", "gradient", True)
    assert 0 < noise["device_max_abs"] <= NOISE_MULTIPLIER * noise["noise_max_abs"]
    assert record.numerics["backward"]["within"] is False  # the gap itself stays on the record
    assert "over" not in record.numerics


def test_a_device_gap_past_noise_fails_with_stage_and_tensor_as_fields(trnsim, monkeypatch):
    record = _run(monkeypatch, DeviceSkewedGrad.apply)
    assert record.reason.kind is ReasonKind.NUMERICS and record.reason.stage == "backward"
    over = record.numerics["over"]
    assert (over["stage"], over["tensor"]) == ("backward", "gradient") and over["max_abs"] > 0
    assert record.numerics["noise"]["noise_max_abs"] == 0.0  # the CPU repeats itself exactly
    assert record.numerics["forward"]["within"] is True


def test_old_records_get_numerics_fields_from_their_blockers_stage():
    """Schema-2 records kept no ``over`` field: it is read from the numerics blocker's stage,
    never from how its message starts."""
    gap = {"kind": "numerics", "message": "NumericsError: gradients: max ...", "stage": "backward", "origin": "device"}
    old = {"model_id": "org/xclip", "status": "fail", "schema_version": 2, "reason": gap, "blockers": [gap],
           "numerics": {"forward": {"max_abs": 0.0, "max_rel": 0.0, "within": True},
                        "backward": {"max_abs": 4.37, "max_rel": 0.0046, "within": False, "where": "w"}}}
    record = ModelRecord.from_dict(old)
    assert record.numerics["over"] == {"stage": "backward", "tensor": "gradient", "max_abs": 4.37, "max_rel": 0.0046,
                                       "within": False, "where": "w"}


class ReorderedOnDevice(torch.autograd.Function):
    """``x @ w.T`` that the device sums in another (legal) order: the same products, added
    over a permuted inner dimension, as another kernel's blocking would."""

    @staticmethod
    def forward(ctx: Any, x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
        ctx.save_for_backward(x, w)
        if x.device.type == "trnsim":
            order = torch.arange(x.shape[-1] - 1, -1, -1, device=x.device)
            return x[..., order] @ w[:, order].T
        return x @ w.T

    @staticmethod
    def backward(ctx: Any, grad: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        x, w = ctx.saved_tensors
        return grad @ w, grad.flatten(0, -2).T @ x.flatten(0, -2)


class Cancelling(torch.nn.Module):
    """Averaged softmax probabilities: they sum to 1 whatever ``w`` is, so the exact gradient
    of ``w`` is 0 and what float32 computes for it is rounding alone, like layoutlmv3's
    ``cls_token`` below an averaged LayerNorm."""

    def __init__(self) -> None:
        super().__init__()
        torch.manual_seed(0)
        self.w = torch.nn.Parameter(torch.randn(64, 64))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.softmax(ReorderedOnDevice.apply(x, self.w), dim=-1)


def _run_model(monkeypatch: pytest.MonkeyPatch, model: torch.nn.Module, inputs: dict[str, torch.Tensor]) -> ModelRecord:
    monkeypatch.setattr(stages, "build_model", lambda ref, cfg: Built(model=model.eval(), inputs=dict(inputs),
                                                                        architecture="Net", model_type="net",
                                                                        num_parameters=1))  # fmt: skip
    return check_model(ModelRef(model_id="test/net", rank=1), SweepConfig.of(device="trnsim", stages=("backward",)))


def test_a_gradient_that_is_only_rounding_gets_a_loss_whose_gradients_are_alive(trnsim, monkeypatch):
    """The mean of softmax probabilities is constant, so its exact gradient is 0 and what
    float32 computes is rounding alone (like layoutlmv3's ``cls_token`` below an averaged
    LayerNorm): comparing it would judge noise. The reference finds the gradients dead and
    takes a loss whose gradients are alive (a fixed random projection of the output); the
    device's other summation order is then within tolerance."""
    torch.manual_seed(2)
    record = _run_model(monkeypatch, Cancelling(), {"x": torch.randn(4, 16, 64)})
    assert record.status is Status.PASS, record.reason
    figures = record.numerics["reference_gradients"]
    assert figures["default_loss_max"] < stages.ALIVE_GRADIENT <= figures["max"]
    assert figures["loss"] == "projection"
    assert record.numerics["backward"]["within"] is True
    assert "backward_not_compared" not in record.numerics


def test_a_device_gap_is_judged_against_float64_and_still_fails(trnsim, monkeypatch):
    record = _run(monkeypatch, DeviceSkewedGrad.apply)
    f64 = record.numerics["noise"]["float64"]
    assert f64["within"] is False and f64["device_vs_float64"] > NOISE_MULTIPLIER * f64["cpu_vs_float64"]
    assert record.reason.kind is ReasonKind.NUMERICS
