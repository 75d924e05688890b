"""Per library: a tiny model of each supported family runs every stage on cpu and trnsim.

One family per library (pyannote: three, each quick) runs in the fast suite, on trnsim (whose load stage runs the CPU
reference too); the cpu runs and the other families are marked slow. On trnsim a
stage may fail for the device's or the lowering tool's reasons (that is what a sweep
reports); what must not happen is a stage that never ran or a failure of ours.
"""

from __future__ import annotations

import importlib.util

import pytest

from sweeper.checks.checker import check_model
from sweeper.records import ModelRef, Origin, Status
from sweeper.settings.config import SweepConfig

pytestmark = pytest.mark.skipif(importlib.util.find_spec("timm") is None, reason="the libraries extra is not installed")

FAST = [
    ("timm/vit_base_patch16_224.augreg2_in21k_ft_in1k", "timm", None),
    ("laion/CLIP-ViT-B-32-laion2B-s34B-b79K", "open_clip", None),
    ("sentence-transformers/all-MiniLM-L6-v2", "sentence-transformers", "bert"),
    ("stabilityai/sdxl-vae", "diffusers", None),
    # pyannote: each family's trnsim run takes 10-15 s here, so all three are in the fast suite.
    ("pyannote/embedding", "pyannote-audio", None),
    ("pyannote/segmentation-3.0", "pyannote-audio", None),
    ("pyannote/wespeaker-voxceleb-resnet34-LM", "pyannote-audio", None),
]
SLOW = [
    ("timm/resnet50.a1_in1k", "timm", None),
    ("timm/convnext_tiny.in12k_ft_in1k", "timm", None),
    ("timm/efficientnet_b0.ra_in1k", "timm", None),
    ("timm/mobilenetv3_small_100.lamb_in1k", "timm", None),
    ("timm/ViT-SO400M-14-SigLIP-384", "open_clip", None),
    ("laion/CLIP-convnext_base_w-laion2B-s13B-b82K-augreg", "open_clip", None),
    ("laion/CLIP-ViT-B-32-roberta-base-laion2B-s12B-b32k", "open_clip", None),  # a transformers text tower
    ("stable-diffusion-v1-5/stable-diffusion-v1-5", "diffusers", None),
    ("stabilityai/stable-diffusion-xl-base-1.0", "diffusers", None),
    ("black-forest-labs/FLUX.1-schnell", "diffusers", None),
    ("stabilityai/stable-diffusion-3.5-medium", "diffusers", None),
    ("lllyasviel/sd-controlnet-canny", "diffusers", None),
    ("sjrhuschlee/flan-t5-large-squad2", "peft", "t5"),
    ("pyannote/speaker-diarization-3.1", "pyannote-audio", None),
]


def _record(model_id: str, library: str, model_type: str | None, device: str):
    ref = ModelRef(model_id, 1, library_name=library, model_type=model_type, source="catalog")
    return check_model(ref, SweepConfig.of(device=device, collect_all=True))


def _assert_every_stage_ran(record, device: str) -> None:
    assert record.stages["load"].status is Status.PASS, record.reason
    # Under --collect-all every stage runs after a failure, except the shapes stage after a
    # compile that found a blocker: other shapes would only meet that blocker again.
    compiled = record.stages["compile"].status is Status.PASS
    assert all(r.status is not Status.BLOCKED for name, r in record.stages.items() if name != "shapes" or compiled), \
        record.stages
    if not compiled:
        assert record.stages["shapes"].status is Status.BLOCKED, record.stages
    if device == "cpu":
        assert record.status is Status.PASS, record.reason
    for reason in record.blockers:  # the device's (or its lowering tool's) findings only
        assert reason.origin in (Origin.DEVICE, Origin.LOWERING_TOOL), reason


@pytest.mark.parametrize("device", [pytest.param("cpu", marks=pytest.mark.slow), "trnsim"])
@pytest.mark.parametrize(("model_id", "library", "model_type"), FAST)
def test_one_family_per_library_runs_every_stage(model_id, library, model_type, device, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    record = _record(model_id, library, model_type, device)
    _assert_every_stage_ran(record, device)
    assert record.num_parameters and record.num_parameters < 5_000_000
    if device == "trnsim":
        assert record.max_abs_diff is not None  # the device's output was compared with the CPU's


@pytest.mark.slow
@pytest.mark.parametrize("device", ["cpu", "trnsim"])
@pytest.mark.parametrize(("model_id", "library", "model_type"), SLOW)
def test_every_family_runs_every_stage(model_id, library, model_type, device, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    _assert_every_stage_ran(_record(model_id, library, model_type, device), device)


def test_a_diffusers_record_lists_its_components_and_where_they_came_from(monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    record = check_model(ModelRef("stable-diffusion-v1-5/stable-diffusion-v1-5", 1, library_name="diffusers", source="catalog"),
                         SweepConfig.of(device="cpu", stages=("load",)))
    assert record.notes["components"] == "unet=UNet2DConditionModel,vae=AutoencoderKL,text_encoder=CLIPTextModel"
    assert record.notes["components_source"] == "name table"


def test_sentence_models_run_with_pooling_and_a_loss_that_has_a_gradient(monkeypatch):
    import torch

    from sweeper.libraries import build

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    built = build(ModelRef("sentence-transformers/all-MiniLM-L6-v2", 1, library_name="sentence-transformers",
                           model_type="bert", source="catalog"), SweepConfig.of(device="cpu"))
    out = built.model(**built.inputs)
    emb = out["sentence_embedding"]
    assert torch.allclose(emb.norm(dim=-1), torch.ones(emb.shape[0]), atol=1e-5)  # Normalize ran
    out.loss.backward()
    grads = [p.grad.abs().max().item() for p in built.model.parameters() if p.grad is not None]
    assert max(grads) > 1e-4
