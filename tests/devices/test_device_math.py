"""Verdicts that hold on a real accelerator, checked on trnsim with the traits of one:

- its declared float32 math (``trnsim-tf32.toml``: TF32 matmuls and convolutions) is
  allowed its error against float64 and no more: the same error planted under the exact
  profile fails;
- its own random numbers: models that draw in forward name their random ops and are fed
  the CPU's draws, while a random op whose draws are wrong still fails;
- backward as users train (train mode, dropout off), with gradients that are alive;
- what the harness itself raised is never the device's.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Any

import pytest
import torch

from sweeper.checks import control, stages
from sweeper.checks.checker import check_model
from sweeper.devices.trnsim import kernels
from sweeper.records import ModelRecord, ModelRef, Origin, Reason, ReasonKind, Stage, Status
from sweeper.settings.config import SweepConfig

REPO = Path(__file__).resolve().parents[2]
TF32 = str(REPO / "configs" / "devices" / "trnsim-tf32.toml")

RESNET = ModelRef("timm/resnet18.a1_in1k", 1, library_name="timm", pipeline_tag="image-classification")
VAE = ModelRef("stabilityai/sd-vae-ft-mse", 1, library_name="diffusers")
WAVLM = ModelRef("microsoft/wavlm-base-plus", 1, library_name="transformers", model_type="wavlm",
                 pipeline_tag="feature-extraction")
MOBILEVIT = ModelRef("apple/mobilevit-small", 1, library_name="transformers", model_type="mobilevit",
                     pipeline_tag="image-classification")
MT5 = ModelRef("google/mt5-small", 1, library_name="transformers", model_type="mt5",
               architecture="MT5ForConditionalGeneration")
# Attention: the declared math's CPU run must meet its matmuls as the device does.
SIGLIP = ModelRef("google/siglip-base-patch16-224", 1, library_name="transformers", model_type="siglip",
                  pipeline_tag="zero-shot-image-classification")
TTS = ModelRef("microsoft/speecht5_tts", 1, library_name="transformers", model_type="speecht5",
               pipeline_tag="text-to-speech")
VITS = ModelRef("facebook/mms-tts-yor", 1, library_name="transformers", model_type="vits", pipeline_tag="text-to-speech")
ENCODEC = ModelRef("facebook/encodec_24khz", 1, library_name="transformers", model_type="encodec",
                   pipeline_tag="feature-extraction")


def _check(ref: ModelRef, *, profile: str | None = None, **settings: Any) -> ModelRecord:
    return check_model(ref, SweepConfig.of(device="trnsim", device_profile=profile, stages=("backward",), **settings))


def _no_numerics_blocker(record: ModelRecord) -> None:
    assert not [b for b in record.blockers if b.kind is ReasonKind.NUMERICS], record.blockers


@pytest.fixture(autouse=True)
def _offline(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")


@pytest.fixture
def planted_tf32(monkeypatch: pytest.MonkeyPatch) -> None:
    """The exact profile's kernels reading float32 matmul and convolution inputs as TF32:
    an error of TF32's size in a device that declares exact float32."""
    applied = kernels.apply_profile

    def plant(profile: Any, names: list[str]) -> None:
        applied(profile, names)
        kernels.ROUND_BITS.update(matmul=10, conv=10)

    monkeypatch.setattr(kernels, "apply_profile", plant)
    yield
    kernels.ROUND_BITS.clear()


@pytest.mark.parametrize("ref", [RESNET, WAVLM, MOBILEVIT, SIGLIP], ids=lambda r: r.model_id)
def test_a_tf32_device_is_allowed_its_declared_error(trnsim, ref):
    record = _check(ref, profile=TF32)
    assert record.precision["float32_conv"] == "tf32" and record.precision["float32_matmul"] == "tf32"
    assert record.status is Status.PASS, record.reason
    within = record.numerics["within_precision"]
    assert within["float64"]["within"] and not within["float64"]["within_exact"]


@pytest.mark.skipif(importlib.util.find_spec("diffusers") is None, reason="the libraries extra is not installed")
def test_a_tf32_diffusers_vae_is_allowed_its_declared_error(trnsim):
    record = _check(VAE, profile=TF32)
    assert record.status is Status.PASS, record.reason
    assert record.numerics["components"]["vae"]["within_precision"]["float64"]["within"]


@pytest.mark.parametrize("ref", [RESNET, WAVLM], ids=lambda r: r.model_id)
def test_the_same_error_in_a_device_that_declares_exact_float32_fails(trnsim, planted_tf32, ref):
    record = _check(ref)
    assert record.precision["float32_conv"] == "ieee"
    assert record.reason is not None and record.reason.kind is ReasonKind.NUMERICS, record.reason
    assert record.reason.origin is Origin.DEVICE
    proof = record.numerics["noise"]["float64"]
    assert proof["device_vs_float64"] > 3 * proof["cpu_vs_float64"] and not proof["within"]


def test_strict_float32_makes_the_tf32_profile_exact(trnsim):
    record = _check(RESNET, profile=TF32, strict_float32=True)
    assert record.precision["float32_conv"] == "ieee" and record.precision["strict"] is True
    assert record.status is Status.PASS, record.reason
    assert "within_precision" not in record.numerics
    assert "--strict-float32" in record.repro


@pytest.mark.parametrize("ref,module", [(TTS, "speecht5.decoder.prenet"), (VITS, "duration_predictor")],
                         ids=["speecht5_tts", "vits"])
def test_a_model_drawing_in_forward_names_its_random_ops_and_is_fed_the_cpus_draws(trnsim, ref, module):
    record = _check(ref)
    assert record.status is Status.PASS, record.reason
    drawn = record.numerics["random_ops"]
    assert any(d["module"] == module and d["stage"] == "forward" for d in drawn), drawn
    fed = record.numerics["random"]["forward"]
    assert fed["compared"].startswith("device run fed the CPU's random draws") and not fed["unmatched"]
    assert all(d["same"] for d in fed["draws"]) and any(d["judged"] for d in fed["draws"])
    assert record.numerics["forward"]["within"]


def test_trnsim_draws_from_its_own_generator(trnsim):
    torch.manual_seed(0)
    on_device = torch.randn(1000, device="trnsim").cpu()
    torch.manual_seed(0)
    on_cpu = torch.randn(1000)
    torch.manual_seed(0)
    again = torch.randn(1000, device="trnsim").cpu()
    assert not torch.equal(on_device, on_cpu)  # another stream, as on every accelerator
    assert torch.equal(on_device, again)  # seeded by torch.manual_seed
    assert abs(float(on_device.std()) - 1.0) < 0.1


@pytest.fixture
def wrong_normal() -> None:
    """trnsim's ``normal_`` drawing twice the standard deviation asked for: a wrong random op."""
    lib = torch.library.Library("aten", "IMPL")

    def normal_(self: torch.Tensor, mean: float = 0.0, std: float = 1.0, *, generator: Any = None) -> torch.Tensor:
        host = self.cpu().normal_(mean, 2 * std)
        return self.copy_(host)

    with pytest.warns(UserWarning):
        lib.impl("normal_", normal_, "PrivateUse1")
    yield
    lib._destroy()


def test_a_wrong_random_op_still_fails(trnsim, wrong_normal):
    record = _check(VITS)
    assert record.reason is not None and record.reason.kind is ReasonKind.NUMERICS, record.reason
    assert record.reason.origin is Origin.DEVICE and record.reason.op == "aten::randn_like"
    assert "distribution" in record.reason.message


def test_encodec_backward_runs_in_train_mode(trnsim):
    record = _check(ENCODEC)
    assert record.notes["backward_mode"] == "train"
    assert record.stages["backward"].status is Status.PASS, record.reason
    assert record.status is Status.PASS


@pytest.mark.parametrize("ref", [MT5, MOBILEVIT], ids=lambda r: r.model_id)
def test_reference_gradients_are_alive(trnsim, ref):
    record = _check(ref)
    figures = record.numerics["reference_gradients"]
    assert figures["max"] >= stages.ALIVE_GRADIENT, figures
    assert "backward_not_compared" not in record.numerics
    assert record.status is Status.PASS, record.reason


def test_mt5s_default_loss_vanishes_and_the_projection_keeps_it_alive(trnsim):
    figures = _check(MT5).numerics["reference_gradients"]
    assert figures["default_loss_max"] < stages.ALIVE_GRADIENT and figures["loss"] == "projection"


def test_a_harness_blocker_is_never_the_devices():
    assert Reason(ReasonKind.HARNESS, "x", origin=Origin.DEVICE).origin is Origin.HARNESS
    assert Reason.from_dict({"kind": "harness", "origin": "device"}).origin is Origin.HARNESS
    # A control that passes on the CPU makes an unplaced failure the device's, never a harness one.
    record = ModelRecord(sweep_id="", model_id="m", key="m", device="trnsim", status=Status.ERROR,
                         blockers=[Reason(ReasonKind.HARNESS, "ours", stage="backward"),
                                   Reason(ReasonKind.UNKNOWN, "kernel", stage="backward")])
    control.attribute(record, {"stage": Stage.BACKWARD.value, "status": "pass"}, upstream_fails=False)
    assert [b.origin for b in record.blockers] == [Origin.HARNESS, Origin.DEVICE]
