"""open_clip models outside the plain registry build offline: transformers text towers, repos
whose config is a registry config under another name."""

from __future__ import annotations

import importlib.util

import pytest

from sweeper.records import ModelRef
from sweeper.settings.config import SweepConfig

pytestmark = pytest.mark.skipif(importlib.util.find_spec("open_clip") is None,
                                reason="open_clip is not installed (make install adds it)")


def test_every_transformers_text_tower_open_clip_names_is_known_offline():
    from open_clip.factory import _MODEL_CONFIGS

    import sweeper  # noqa: F401 - torchvision's compat import comes first
    from sweeper.libraries.open_clip.text import TEXT_TOWERS

    named = {c["text_cfg"]["hf_model_name"] for c in _MODEL_CONFIGS.values() if "hf_model_name" in c.get("text_cfg", {})}
    assert named and named <= set(TEXT_TOWERS), named - set(TEXT_TOWERS)


def test_a_roberta_text_tower_builds_and_trains_with_the_hub_unreachable(monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    from sweeper.libraries.open_clip.library import OpenClip

    ref = ModelRef("laion/CLIP-ViT-B-32-roberta-base-laion2B-s12B-b32k", 1, library_name="open_clip", source="catalog")
    built = OpenClip().build(ref, SweepConfig.of(device="cpu"))
    text = built.model.model.text
    assert text.config.model_type == "roberta"
    assert int(built.inputs["text"].max()) < text.config.vocab_size
    assert "roberta-base" in built.notes["text_tower"]
    built.model(**built.inputs).loss.backward()
    assert all(p.grad is not None for p in text.parameters() if p.requires_grad)


def test_random_weights_take_the_released_sizes():
    from sweeper.libraries.open_clip.text import text_config

    large = text_config("xlm-roberta-large", tiny=False)
    assert (large.model_type, large.hidden_size, large.num_hidden_layers, large.vocab_size) == ("xlm-roberta", 1024, 24, 250002)
    tiny = text_config("xlm-roberta-large", tiny=True)
    assert tiny.hidden_size < 1024 and tiny.num_hidden_layers < 24
    assert text_config("someone/unknown-text-model", tiny=True) is None


def test_a_repo_outside_the_registry_builds_the_config_its_table_entry_names(monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    from sweeper.libraries.open_clip.library import OpenClip

    ref = ModelRef("Marqo/marqo-fashionSigLIP", 1, library_name="open_clip", model_type="siglip", source="catalog")
    built = OpenClip().build(ref, SweepConfig.of(device="cpu"))
    assert built.notes["open_clip_model"] == "ViT-B-16-SigLIP" and "table" in built.notes["open_clip_model_source"]
    assert built.notes["loss"] == "SigLipLoss"


def test_the_table_s_evidence_holds_the_listing_s_parameter_count_is_the_config_s(top1000_csv):
    import csv

    import open_clip

    from sweeper.libraries.open_clip.library import REPO_CONFIGS

    with open(top1000_csv, newline="") as f:
        rows = {r["id"].lower(): r for r in csv.DictReader(f)}
    for repo, name in REPO_CONFIGS.items():
        model = open_clip.create_model(name, pretrained=None)
        scalars = sum(1 for p in model.parameters() if p.numel() == 1)
        assert int(float(rows[repo]["parameters"])) == sum(p.numel() for p in model.parameters()) - scalars
