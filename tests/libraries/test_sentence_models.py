"""sentence-transformers models as the library runs them: the encoder stack, pooled."""

from __future__ import annotations

import importlib.util

import pytest

from sweeper.records import ModelRef
from sweeper.settings.config import SweepConfig

pytestmark = pytest.mark.skipif(importlib.util.find_spec("sentence_transformers") is None,
                                reason="the libraries extra is not installed")


def _st_ref(model_id: str, model_type: str, **fields) -> ModelRef:
    return ModelRef(model_id, 1, library_name="sentence-transformers", model_type=model_type, source="catalog", **fields)


def _embeds(built) -> None:
    """The built sentence model runs on its own inputs and gives one embedding per row."""
    out = built.model(**built.inputs)
    emb = out["sentence_embedding"]
    assert emb.shape[0] == built.inputs["input_ids"].shape[0]
    out.loss.backward()


def test_a_t5_sentence_model_runs_the_encoder_alone(monkeypatch):
    from sweeper.libraries import build

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    built = build(_st_ref("sentence-transformers/sentence-t5-base", "t5"), SweepConfig.of(device="cpu"))
    assert built.architecture == "SentenceTransformer(T5EncoderModel)"
    assert not any("decoder" in name for name, _ in built.model.named_parameters())
    _embeds(built)


def test_an_encoder_decoder_built_whole_runs_its_encoder_stack(monkeypatch):
    from sweeper.libraries import build

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    built = build(_st_ref("org/bart-sentences", "bart", architecture="BartModel"), SweepConfig.of(device="cpu"))
    assert built.architecture == "SentenceTransformer(BartModel.encoder)"
    assert not any("decoder" in name for name, _ in built.model.named_parameters())
    _embeds(built)
