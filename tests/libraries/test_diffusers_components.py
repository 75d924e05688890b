"""A diffusers repo is several models: each component runs every stage on its own, the
repo's record lists them with their stages and passes only when all pass; components
come from model_index.json when known, else from the name table."""

from __future__ import annotations

import importlib.util

import pytest

from sweeper.checks.checker import check_model
from sweeper.records import ModelRef, Origin, Outcome, ReasonKind, Status
from sweeper.settings.config import SweepConfig

pytestmark = pytest.mark.skipif(importlib.util.find_spec("diffusers") is None, reason="the libraries extra is not installed")

STAGES = ("load", "to_device", "forward", "backward", "compile", "shapes")
# A VAE and a text encoder: the smallest pipeline with a diffusers and a transformers part.
INDEX = {"_class_name": "StableDiffusionPipeline", "_diffusers_version": "0.30.0",
         "vae": ["diffusers", "AutoencoderKL"], "text_encoder": ["transformers", "CLIPTextModel"],
         "tokenizer": ["transformers", "CLIPTokenizer"], "scheduler": ["diffusers", "PNDMScheduler"]}


def _ref(model_id: str, config: dict | None = None) -> ModelRef:
    return ModelRef(model_id, 1, library_name="diffusers", source="catalog", config=config)


def _cfg(device: str, **kw) -> SweepConfig:
    # aot_eager on the CPU: the stage's wiring is under test here, not inductor's C++ build.
    backend = {"compile_backend": "aot_eager"} if device == "cpu" else {}
    return SweepConfig.of(device=device, collect_all=True, **backend, **kw)


@pytest.mark.parametrize("device", ["cpu", "trnsim"])
def test_a_repo_record_lists_each_component_with_its_own_stages(device, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    record = check_model(_ref("someone/tiny-pipeline", INDEX), _cfg(device))
    parts = record.notes["component_stages"]
    assert list(parts) == ["vae", "text_encoder"]  # the tokenizer and scheduler are no models
    assert parts["vae"]["class"] == "AutoencoderKL" and parts["text_encoder"]["class"] == "CLIPTextModel"
    for part in parts.values():
        assert list(part["stages"]) == list(STAGES)
        assert part["num_parameters"] > 0
    assert record.notes["components_source"] == "model_index.json"
    assert record.architecture == "AutoencoderKL+CLIPTextModel"
    assert all(r.status is not Status.BLOCKED for r in record.stages.values()), record.stages
    if device == "cpu":
        assert record.status is Status.PASS and record.outcome is Outcome.PASS, record.reason
        assert all(p["status"] == "pass" for p in parts.values())
    else:
        assert record.max_abs_diff is not None  # each component's output compared with the CPU's
        assert set(record.numerics["components"]) == {"vae", "text_encoder"}
        for reason in record.blockers:
            assert reason.origin in (Origin.DEVICE, Origin.LOWERING_TOOL), reason


def _profile_refusing(folder, op: str):
    """The default trnsim profile with ``op`` refused in eager mode and under compile."""
    from sweeper.devices.trnsim.profile import DEFAULT_PROFILE

    path = folder / "trnsim-no-group-norm.toml"
    path.write_text(DEFAULT_PROFILE.read_text() + f'\n[[ops]]\nfamily = "test"\neager = "error"\ncompile = "error"\n'
                                                  f'names = ["{op}"]\n')
    return path


def test_a_failing_component_fails_the_repo_and_the_blocker_names_it(tmp_path, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    # Group norm is the VAE's alone here (CLIP's text tower uses layer norm).
    profile = _profile_refusing(tmp_path, "aten::native_group_norm")
    record = check_model(_ref("someone/tiny-pipeline", INDEX), _cfg("trnsim", device_profile=str(profile),
                                                                    stages=("load", "to_device", "forward")))
    parts = record.notes["component_stages"]
    assert parts["text_encoder"]["status"] == "pass", parts
    assert parts["vae"]["status"] != "pass" and parts["vae"]["stages"]["forward"] == "fail"
    assert record.outcome is not Outcome.PASS
    assert record.reason is not None and record.reason.message.startswith("vae: "), record.reason
    assert record.stages["forward"].status is Status.FAIL
    assert record.stages["forward"].reason.message.startswith("vae: ")
    assert all(b.message.startswith("vae: ") for b in record.blockers)
    from sweeper.report.one_model import describe_record

    text = describe_record(record)  # what `sweep one` prints
    assert "components (model_index.json):" in text and "text_encoder" in text and "forward=fail" in text
    assert record.reason.kind is ReasonKind.UNSUPPORTED_OP and "group_norm" in (record.reason.op or ""), record.reason


# Rows of the top-1000 snapshot that name their family only in the id.
NAME_TABLE_ROWS = [
    ("stabilityai/stable-video-diffusion-img2vid-xt",
     "unet=UNetSpatioTemporalConditionModel,vae=AutoencoderKLTemporalDecoder,image_encoder=CLIPVisionModelWithProjection"),
    ("tencent/DepthCrafter", "unet=UNetSpatioTemporalConditionModel"),
    ("Wan-AI/Wan2.1-T2V-14B", "transformer=WanTransformer3DModel,vae=AutoencoderKLWan,text_encoder=UMT5EncoderModel"),
    ("Wan-AI/Wan2.1-I2V-14B-480P",
     "transformer=WanTransformer3DModel,vae=AutoencoderKLWan,text_encoder=UMT5EncoderModel,image_encoder=CLIPVisionModel"),
    ("Lightricks/LTX-Video", "transformer=LTXVideoTransformer3DModel,vae=AutoencoderKLLTXVideo,text_encoder=T5EncoderModel"),
    ("Tencent-Hunyuan/HunyuanDiT-v1.1-Diffusers-Distilled",
     "transformer=HunyuanDiT2DModel,vae=AutoencoderKL,text_encoder=BertModel,text_encoder_2=T5EncoderModel"),
    ("prs-eth/marigold-normals-lcm-v0-1", "unet=UNet2DConditionModel,vae=AutoencoderKL,text_encoder=CLIPTextModel"),
    ("ashawkey/zero123-xl-diffusers", "unet=UNet2DConditionModel,vae=AutoencoderKL,image_encoder=CLIPVisionModelWithProjection"),
    ("latent-consistency/lcm-lora-sdv1-5", "unet=UNet2DConditionModel+LoRA"),
    ("XLabs-AI/flux-RealismLora", "transformer=FluxTransformer2DModel+LoRA"),
    ("black-forest-labs/FLUX.1-Redux-dev", "image_embedder=ReduxImageEncoder,image_encoder=SiglipVisionModel"),
]


@pytest.mark.parametrize(("model_id", "listing"), NAME_TABLE_ROWS)
def test_a_name_table_family_builds_and_runs_forward_and_backward(model_id, listing, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    record = check_model(_ref(model_id), _cfg("cpu", stages=("load", "to_device", "forward", "backward")))
    assert record.notes["components"] == listing
    assert record.notes["components_source"] == "name table"
    assert record.status is Status.PASS, (record.reason, record.notes["component_stages"])
    for name, part in record.notes["component_stages"].items():
        assert part["stages"]["backward"] == "pass", name
        assert part["num_parameters"] < 2_000_000, name  # tiny


def test_a_lora_repo_trains_its_adapter(monkeypatch):
    import torch

    from sweeper.libraries import build

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    built = build(_ref("latent-consistency/lcm-lora-sdv1-5"), SweepConfig.of(device="cpu"))
    unet = built.components["unet"]
    unet.model(**unet.inputs).loss.backward()
    lora = {n: p.grad for n, p in unet.model.named_parameters() if "lora_" in n}
    assert lora and all(g is not None and torch.count_nonzero(g) > 0 for g in lora.values())


@pytest.mark.parametrize(("model_id", "missing"), [
    ("ByteDance/Hyper-SD", "which base a row means is not in its id"),
    ("h94/IP-Adapter-FaceID", "not a model of their own"),
    ("yisol/IDM-VTON", "remote code"),
    ("wavymulder/portraitplus", "model_index.json is needed"),
])
def test_a_repo_the_table_cannot_map_names_what_is_missing(model_id, missing, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    record = check_model(_ref(model_id), _cfg("cpu", stages=("load",)))
    assert record.reason is not None and record.reason.kind is ReasonKind.CONFIG_ERROR
    assert record.outcome is Outcome.ENVIRONMENT and missing in record.reason.message


@pytest.mark.slow
@pytest.mark.parametrize("device", ["cpu", "trnsim"])
@pytest.mark.parametrize("model_id", [m for m, _ in NAME_TABLE_ROWS])
def test_every_name_table_family_runs_every_stage(model_id, device, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    record = check_model(_ref(model_id), SweepConfig.of(device=device, collect_all=True))
    assert all(r.status is not Status.BLOCKED for r in record.stages.values()), record.stages
    for name, part in record.notes["component_stages"].items():
        assert list(part["stages"]) == list(STAGES), name
    if device == "cpu":
        assert record.status is Status.PASS, record.reason
    for reason in record.blockers:  # the device's (or its lowering tool's) findings only
        assert reason.origin in (Origin.DEVICE, Origin.LOWERING_TOOL), reason


def test_a_component_is_the_same_build_whatever_comes_before_it_and_is_checked_once(monkeypatch):
    import torch

    from sweeper.checks.checker import Checker
    from sweeper.libraries.diffusers.library import Diffusers

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    alone = {k: v for k, v in INDEX.items() if k != "vae"}  # the text encoder built first, not second
    cfg = SweepConfig.of(device="cpu", stages=("load", "to_device", "forward", "backward"))
    second = Diffusers().build(_ref("someone/tiny-pipeline", INDEX), cfg).components["text_encoder"]
    first = Diffusers().build(_ref("someone/text-only", alone), cfg).components["text_encoder"]
    for (name, a), (_, b) in zip(first.model.state_dict().items(), second.model.state_dict().items(), strict=True):
        assert torch.equal(a, b), name
    checker = Checker.for_settings(cfg)
    checker.check(_ref("someone/tiny-pipeline", INDEX))
    record = checker.check(_ref("someone/text-only", alone))
    assert record.status is Status.PASS, record.reason
    assert record.notes["components_reused_from"] == {"text_encoder": "someone/tiny-pipeline"}
