"""open_clip models whose text tower is a transformers model build offline."""

from __future__ import annotations

import importlib.util

import pytest

from sweeper.records import ModelRef
from sweeper.settings.config import SweepConfig

pytestmark = pytest.mark.skipif(importlib.util.find_spec("open_clip") is None,
                                reason="open_clip is not installed (make install adds it)")


def test_every_transformers_text_tower_open_clip_names_is_known_offline():
    import sweeper  # noqa: F401 - torchvision's compat import comes first
    from open_clip.factory import _MODEL_CONFIGS

    from sweeper.libraries.open_clip_text import TEXT_TOWERS

    named = {c["text_cfg"]["hf_model_name"] for c in _MODEL_CONFIGS.values() if "hf_model_name" in c.get("text_cfg", {})}
    assert named and named <= set(TEXT_TOWERS), named - set(TEXT_TOWERS)


def test_a_roberta_text_tower_builds_and_trains_with_the_hub_unreachable(monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    from sweeper.libraries.open_clip_lib import OpenClip

    ref = ModelRef("laion/CLIP-ViT-B-32-roberta-base-laion2B-s12B-b32k", 1, library_name="open_clip", source="catalog")
    built = OpenClip().build(ref, SweepConfig.of(device="cpu"))
    text = built.model.model.text
    assert text.config.model_type == "roberta"
    assert int(built.inputs["text"].max()) < text.config.vocab_size
    assert "roberta-base" in built.notes["text_tower"]
    built.model(**built.inputs).loss.backward()
    assert all(p.grad is not None for p in text.parameters() if p.requires_grad)


def test_random_weights_take_the_released_sizes():
    from sweeper.libraries.open_clip_text import text_config

    large = text_config("xlm-roberta-large", tiny=False)
    assert (large.model_type, large.hidden_size, large.num_hidden_layers, large.vocab_size) == ("xlm-roberta", 1024, 24, 250002)
    tiny = text_config("xlm-roberta-large", tiny=True)
    assert tiny.hidden_size < 1024 and tiny.num_hidden_layers < 24
    assert text_config("someone/unknown-text-model", tiny=True) is None
