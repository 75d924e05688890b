"""Which library builds a ref; formats that are not PyTorch; plugins through entry points."""

from __future__ import annotations

import pytest

from sweeper.libraries import registry
from sweeper.libraries.base import Library, MissingDependencyError
from sweeper.libraries.diffusers.library import components
from sweeper.libraries.formats import NotPytorchError, gguf_base
from sweeper.records import ModelRef, ReasonKind, Status, kind_info
from sweeper.settings.errors import UnsupportedLibraryError


def _ref(model_id: str, library: str | None, **kw) -> ModelRef:
    return ModelRef(model_id, 1, library_name=library, source="catalog", **kw)


@pytest.mark.parametrize(("library", "name"), [
    ("transformers", "transformers"), (None, "transformers"), ("", "transformers"),
    ("sentence-transformers", "sentence-transformers"), ("timm", "timm"), ("open_clip", "open_clip"),
    ("diffusers", "diffusers"), ("pyannote-audio", "pyannote"), ("peft", "peft"),
])
def test_each_hub_library_has_its_module(library, name):
    assert registry.library_for(_ref("a/b", library)).name == name


def test_a_gguf_repo_is_named_with_the_base_it_packages_and_never_passes():
    with pytest.raises(NotPytorchError) as caught:
        registry.library_for(_ref("bartowski/DeepSeek-R1-Distill-Qwen-14B-GGUF", "gguf", model_type="mistral"))
    assert "gguf" in str(caught.value) and "'qwen2'" in str(caught.value)
    assert caught.value.reason_kind is ReasonKind.NOT_PYTORCH
    assert kind_info(ReasonKind.NOT_PYTORCH).status is Status.SKIP
    assert gguf_base("MaziyarPanahi/Llama-3.2-1B-Instruct-GGUF") == "llama"


@pytest.mark.parametrize("library", ["onnx", "mlx", "transformers.js", "keras", "fasttext"])
def test_other_formats_are_not_pytorch(library):
    with pytest.raises(NotPytorchError, match="not a PyTorch model"):
        registry.library_for(_ref("a/b", library))


def test_qdrant_s_fastembed_models_are_not_pytorch_whatever_the_listing_says():
    with pytest.raises(NotPytorchError, match="fastembed"):
        registry.library_for(_ref("Qdrant/bm25", "transformers"))


def test_a_library_no_one_registered_is_unsupported_and_named():
    with pytest.raises(UnsupportedLibraryError, match="'ultralytics'"):
        registry.library_for(_ref("Bingsu/adetailer", "ultralytics"))
    with pytest.raises(UnsupportedLibraryError, match=r"'somelib' is not supported \(supported: .*timm"):
        registry.library_for(_ref("a/b", "somelib"))


def test_a_known_library_that_is_not_driven_says_exactly_why():
    from sweeper.checks.versions import package_version

    with pytest.raises(UnsupportedLibraryError) as caught:
        registry.library_for(_ref("flair/ner-english-fast", "flair"))
    message = str(caught.value)
    assert "requires transformers<5" in message and f"installed: transformers {package_version('transformers')}" in message
    with pytest.raises(UnsupportedLibraryError, match="AGPL-3.0"):
        registry.library_for(_ref("Bingsu/adetailer", "ultralytics"))


def test_a_plugin_library_from_the_entry_point_group_builds_its_refs(monkeypatch):
    class Yolo(Library):
        name = "ultralytics-plugin"
        hub_names = frozenset({"ultralytics"})

    class Point:
        def load(self):
            return Yolo

    monkeypatch.setattr(registry, "entry_points", lambda group: [Point()] if group == registry.ENTRY_POINT_GROUP else [])
    monkeypatch.setattr(registry, "_REGISTERED", dict(registry._REGISTERED))
    registry.libraries.cache_clear()
    try:
        assert registry.library_for(_ref("Bingsu/adetailer", "ultralytics")).name == "ultralytics-plugin"
        assert "ultralytics" in registry.supported_names()
    finally:
        registry.libraries.cache_clear()


def test_pyannote_names_exactly_what_is_missing(monkeypatch):
    import sweeper.libraries.base as base

    lib = registry.get("pyannote")
    importable = base._importable
    monkeypatch.setattr(base, "_importable", lambda name: name != "pyannote.audio" and importable(name))
    assert lib.missing() == ["pyannote.audio"]  # as on a machine without the libraries extra
    with pytest.raises(MissingDependencyError, match="pyannote.audio"):
        lib.build(_ref("pyannote/segmentation-3.0", "pyannote-audio"), None)
    assert lib.architecture(_ref("pyannote/wespeaker-voxceleb-resnet34-LM", "pyannote-audio")) == "WeSpeakerResNet34"


def test_diffusers_components_come_from_model_index_when_known_else_the_name_table():
    index = {"_class_name": "StableDiffusionXLPipeline", "unet": ["diffusers", "UNet2DConditionModel"],
             "vae": ["diffusers", "AutoencoderKL"], "text_encoder": ["transformers", "CLIPTextModel"]}
    spec, source = components(_ref("someone/custom-model", "diffusers", config=index))
    assert source == "model_index.json" and spec["unet"] == ("UNet2DConditionModel", {"sdxl": True, "in_channels": 4})
    assert spec["text_encoder"] == ("CLIPTextModel", {})  # a transformers component, checked too
    spec, source = components(_ref("SG161222/Realistic_Vision_V5.1_noVAE", "diffusers"))
    assert source == "name table" and "vae" not in spec  # "noVAE" is not a VAE
    spec, _ = components(_ref("ashawkey/zero123-xl-diffusers", "diffusers"))  # not SDXL: zero123's 8-channel UNet
    assert spec["unet"] == ("UNet2DConditionModel", {"in_channels": 8})
    spec, _ = components(_ref("XLabs-AI/flux-RealismLora", "diffusers"))  # "XLabs" is no SDXL either
    assert spec == {"transformer": ("FluxTransformer2DModel", {"lora": True})}
    assert components(_ref("ByteDance/Hyper-SD", "diffusers")) is None  # LoRAs of several bases


@pytest.mark.parametrize(("model_id", "fmt"), [
    ("TheBloke/phi-2-GGUF", "gguf"), ("Systran/faster-whisper-base", "ctranslate2"),
    ("mlc-ai/Llama-3.2-1B-Instruct-q4f16_1-MLC", "mlc"), ("ValueFX9507/Tifa-DeepsexV2-7b-MGRPO-GGUF-Q8", "gguf"),
])
def test_a_format_the_listing_leaves_unnamed_shows_in_the_id(model_id, fmt):
    with pytest.raises(NotPytorchError, match=f"not a PyTorch model: {fmt}"):
        registry.library_for(_ref(model_id, None))
    assert registry.library_for(_ref("openai/whisper-tiny", None)).name == "transformers"


def test_the_zoo_lists_other_libraries_among_transformers_types():
    import itertools

    from sweeper.sources.zoo import ZooSource

    top = list(itertools.islice(ZooSource().refs(), 50))
    assert [r.rank for r in top] == list(range(1, 51))
    libraries = {r.library_name for r in top}
    assert {"transformers", "timm", "open_clip", "diffusers", "pyannote-audio"} <= libraries
    for ref in top:  # every entry is one its library claims, with an architecture it knows offline
        library = registry.library_for(ref)
        if ref.library_name != "transformers":
            assert library.architecture(ref), ref.model_id


def test_repos_of_other_libraries_never_share_a_check():
    from sweeper.settings.config import SweepConfig
    from sweeper.storage.fingerprint import model_part

    cfg = SweepConfig.of(device="cpu")
    a = _ref("apple/DFN2B-CLIP-ViT-L-14-39B", "open_clip", model_type="clip")
    b = _ref("apple/DFN5B-CLIP-ViT-H-14-378", "open_clip", model_type="clip")
    assert model_part(a, cfg, offline=True) != model_part(b, cfg, offline=True)
    gguf = model_part(_ref("TheBloke/phi-2-GGUF", None), cfg, offline=True)
    assert "not_pytorch" in gguf


def test_repos_that_build_the_same_pipeline_share_one_check():
    from sweeper.settings.config import SweepConfig
    from sweeper.storage.fingerprint import model_part

    cfg = SweepConfig.of(device="cpu")

    def part(model_id, library, config=None):
        return model_part(_ref(model_id, library, config=config), cfg, offline=True)

    # Two SD 1.5 repos the name table maps to the same components: one check.
    assert part("stable-diffusion-v1-5/stable-diffusion-v1-5", "diffusers") == part("crynux-ai/stable-diffusion-v1-5", "diffusers")
    assert part("stable-diffusion-v1-5/stable-diffusion-v1-5", "diffusers") != part("stabilityai/stable-diffusion-xl-base-1.0", "diffusers")
    # pyannote: the same models share; a repo whose library came from the id keeps its own note.
    assert part("pyannote/segmentation-3.0", "pyannote-audio") == part("pyannote/segmentation", "pyannote-audio")
    assert part("pyannote/segmentation-3.0", "pyannote-audio") != part("pyannote/embedding", "pyannote-audio")
    assert part("pyannote/segmentation-3.0", "pyannote-audio") != part("tezuesh/segmentation", None)
    # timm: one architecture under two pretrained tags is one tiny build.
    assert part("timm/resnet50.a1_in1k", "timm") == part("timm/resnet50.tv_in1k", "timm")
    assert part("timm/resnet50.a1_in1k", "timm") != part("timm/resnet18.a1_in1k", "timm")
    # timm repos whose id names no registered architecture share their config error.
    assert part("SmilingWolf/wd-eva02-large-tagger-v3", "timm") == part("Marqo/nsfw-image-detection-384", "timm")
    assert part("SmilingWolf/wd-eva02-large-tagger-v3", "timm") != part("timm/resnet50.a1_in1k", "timm")
    # open_clip: the registry's model name; two repos outside the registry share their config error.
    assert part("laion/CLIP-ViT-B-32-laion2B-s34B-b79K", "open_clip") != part("laion/CLIP-ViT-B-32-roberta-base-laion2B-s12B-b32k", "open_clip")
    assert part("someone/clip-a", "open_clip") == part("someone/clip-b", "open_clip")
    # diffusers repos whose components are not known for the same reason share that error.
    assert part("aipicasso/emi", "diffusers") == part("wavymulder/portraitplus", "diffusers")
    # peft: adapters on the same base type with the same adapter settings are one build.
    def adapter(model_id, model_type, config=None):
        return model_part(_ref(model_id, "peft", model_type=model_type, config=config), cfg, offline=True)

    assert adapter("a/flan-t5-lora", "t5") == adapter("b/flan-t5-qa-lora", "t5")
    assert adapter("a/flan-t5-lora", "t5") != adapter("a/bert-lora", "bert")
    assert adapter("a/flan-t5-lora", "t5") != adapter("a/flan-t5-lora", "t5", config={"peft_type": "LORA", "target_modules": ["q"]})
    # Pretrained weights are each repo's own.
    pretrained = SweepConfig.of(device="cpu", weights="pretrained")
    assert (model_part(_ref("pyannote/segmentation-3.0", "pyannote-audio"), pretrained, offline=True)
            != model_part(_ref("pyannote/segmentation", "pyannote-audio"), pretrained, offline=True))


def test_a_row_claimed_from_its_id_counts_as_its_library_in_records_and_fingerprints():
    from sweeper.records import Status
    from sweeper.settings.config import SweepConfig
    from sweeper.storage.fingerprint import Fingerprinter
    from sweeper.storage.reuse import copy_for

    claimed, named = _ref("tezuesh/diarization", None), _ref("pyannote/speaker-diarization-3.1", "pyannote-audio")
    assert registry.library_name_of(claimed) == "pyannote-audio"
    assert registry.library_name_of(_ref("charactr/vocos-mel-24khz", None)) == "vocos"
    assert registry.library_name_of(_ref("someone/some-model", None)) is None
    fingerprint = Fingerprinter(SweepConfig.of(device="cpu"), {}, offline=True)
    assert fingerprint.parts(claimed)["library"] == fingerprint.parts(named)["library"]
    from sweeper.records import base_record

    check = base_record(named, sweep_id="s", device="cpu", status=Status.PASS)
    assert copy_for(check, claimed, repro="").library_name == "pyannote-audio"


def test_timm_names_read_without_import_are_the_ones_timm_registers():
    # Planning reads them from timm's source: a name it misses would share another's verdict.
    pytest.importorskip("timm")
    from sweeper.libraries.timm import library as timm_library

    timm_library.Timm().require()
    from timm.models import _registry

    assert timm_library.registered_names() == frozenset(_registry._model_entrypoints)
