"""Numerics on trnsim: what a device/CPU difference is blamed on, gradients, bfloat16.

Small modules defined here go through ``check_model`` (materialisation stubbed to return
them), so the verdicts are the ones a sweep records.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
import torch
from trnsim_helpers import DeviceSkewedGrad

from sweeper.checks import stages
from sweeper.checks.checker import check_model
from sweeper.libraries.transformers import Built
from sweeper.records import ModelRef, Origin, ReasonKind, Status
from sweeper.settings.config import SweepConfig
from sweeper.sources.zoo import zoo_ref

STAGES = ("backward",)  # load, to_device, forward, backward


class Net(torch.nn.Module):
    """A linear layer and a hook for what the forward does after it."""

    def __init__(self, after: Any) -> None:
        super().__init__()
        torch.manual_seed(0)
        self.proj = torch.nn.Linear(8, 8)
        self.after = after

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.after(self.proj(x))


def sampled_patches(h: torch.Tensor) -> torch.Tensor:
    """Keep a random half of the positions, drawn with torch's RNG (as ViLT samples patches)."""
    keep = torch.multinomial(torch.ones(h.shape[1], device=h.device), h.shape[1] // 2)
    return h[:, keep]


def unseeded_noise(h: torch.Tensor) -> torch.Tensor:
    """Noise from a generator seeded by the OS: no seed reaches it."""
    noise = np.random.default_rng().standard_normal(h.shape).astype("float32")
    return h + torch.from_numpy(noise).to(h.device)


def run(monkeypatch: pytest.MonkeyPatch, after: Any, **cfg: Any) -> Any:
    """check_model on trnsim of ``Net(after)`` with a batch of 4 x 8 inputs."""
    torch.manual_seed(1)
    inputs = {"x": torch.randn(4, 8)}

    def built(ref: Any, cfg: Any) -> Built:
        return Built(model=Net(after).eval(), inputs=dict(inputs), architecture="Net", model_type="net",
                     num_parameters=72)

    monkeypatch.setattr(stages, "build_model", built)
    ref = ModelRef(model_id="test/net", rank=1)
    return check_model(ref, SweepConfig.of(device="trnsim", stages=STAGES, **cfg))


def test_a_model_sampling_with_torch_rng_matches_under_the_same_seed(trnsim, monkeypatch):
    record = run(monkeypatch, sampled_patches)
    assert record.status is Status.PASS, record.reason
    assert record.numerics["forward"]["max_abs"] == 0.0
    assert "nondeterministic" not in record.numerics


def test_a_model_whose_cpu_runs_differ_is_nondeterministic_not_a_device_failure(trnsim, monkeypatch):
    record = run(monkeypatch, unseeded_noise)
    assert record.status is Status.PASS, record.reason
    assert record.stages["forward"].status is Status.PASS
    assert not record.numerics["forward"]["within"]
    # The CPU-vs-CPU difference is kept, and the gradient verdict is skipped too.
    assert record.numerics["nondeterministic"]["max_abs"] > 0.01
    assert record.stages["backward"].status is Status.PASS


def test_a_device_that_is_off_still_fails_numerics(trnsim, monkeypatch):
    def off_on_device(h: torch.Tensor) -> torch.Tensor:
        return h + 1 if h.device.type == "trnsim" else h

    record = run(monkeypatch, off_on_device)
    assert record.status is Status.FAIL
    assert record.reason.kind is ReasonKind.NUMERICS and record.stages["forward"].status is Status.FAIL
    assert "nondeterministic" not in record.numerics


def test_a_nan_cpu_reference_is_the_models_not_the_devices(trnsim, monkeypatch):
    record = run(monkeypatch, lambda h: torch.log(h - 100))  # log of negatives: NaN on any device
    assert record.reason.kind is ReasonKind.NONFINITE_REFERENCE
    assert record.reason.origin is Origin.MODEL  # and the CPU control does not overturn it
    assert "CPU reference output has NaN" in record.reason.message
    assert record.stages["forward"].status is Status.FAIL


def test_logits_masked_with_minus_inf_on_both_sides_are_compared_on_the_rest(trnsim, monkeypatch):
    def masked(h: torch.Tensor) -> torch.Tensor:
        keep = torch.arange(h.shape[-1], device=h.device) < 5
        return h.masked_fill(~keep, float("-inf")).softmax(-1) + h.masked_fill(~keep, float("-inf"))

    record = run(monkeypatch, masked)
    assert record.status is Status.PASS, record.reason
    assert record.numerics["forward"]["max_abs"] == 0.0


def test_gradient_differences_are_recorded_and_a_wrong_backward_fails_numerics(trnsim, monkeypatch):
    good = run(monkeypatch, torch.tanh)
    assert good.status is Status.PASS
    assert set(good.numerics["backward"]) >= {"max_abs", "max_rel", "within"}
    assert good.numerics["backward"]["max_abs"] < 1e-6

    bad = run(monkeypatch, DeviceSkewedGrad.apply)
    assert bad.stages["forward"].status is Status.PASS and bad.numerics["forward"]["within"]
    assert bad.stages["backward"].status is Status.FAIL
    assert bad.reason.kind is ReasonKind.NUMERICS and "gradients" in bad.reason.message
    assert bad.numerics["backward"]["max_rel"] == pytest.approx(0.5, rel=1e-3)
    assert bad.max_abs_diff == bad.numerics["forward"]["max_abs"]


def test_bfloat16_tiny_bert_passes_every_stage_with_its_dtype_recorded(trnsim):
    record = check_model(zoo_ref("bert", 1), SweepConfig.of(device="trnsim", dtype="bfloat16", retie_weights=True))
    assert record.status is Status.PASS, record.reason
    assert record.dtype == "bfloat16"
    assert all(r.status is Status.PASS for r in record.stages.values())
    # Judged with bfloat16's tolerance, against a CPU run in bfloat16.
    assert record.numerics["tolerance"]["rtol"] > 1e-3
    assert record.numerics["backward"]["within"]
    assert "sweep one" in record.repro and "--dtype bfloat16" in record.repro
