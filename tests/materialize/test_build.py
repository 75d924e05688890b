"""Materialising refs: head choice, tiny builds that run forward + backward, errors."""

from __future__ import annotations

import math

import pytest
import torch

from sweeper.checks.reference import scalar_loss
from sweeper.libraries.transformers import materialize
from sweeper.libraries.transformers.build import TooLargeError
from sweeper.records import ModelRef
from sweeper.settings.config import SweepConfig
from sweeper.settings.errors import ConfigError, InputSynthesisError, RemoteCodeError, UnsupportedLibraryError
from sweeper.sources.zoo import zoo_ref

CFG = SweepConfig()
SMALL_BERT = {"model_type": "bert", "hidden_size": 64, "num_attention_heads": 2, "num_hidden_layers": 3,
              "intermediate_size": 128, "vocab_size": 500, "max_position_embeddings": 64}


def _ref(**fields) -> ModelRef:
    return ModelRef(**{"model_id": "org/model", "rank": 1, **fields})


@pytest.mark.parametrize(
    "model_type", ["bert", "llama", "t5", "vit", "whisper", "wav2vec2", "clip", "qwen3_moe", "bailing_hybrid"]
)
def test_tiny_zoo_models_give_a_loss_and_gradients(model_type):
    built = materialize(zoo_ref(model_type, 1), CFG)
    assert built.num_parameters < 20_000_000 and built.notes["shrink"] == "tiny"
    assert not built.model.training
    out = built.model(**built.inputs)
    assert built.has_labels and math.isfinite(out.loss.item())
    out.loss.backward()
    assert any(p.grad is not None and p.grad.abs().sum() > 0 for p in built.model.parameters())


def test_inputs_respect_the_config():
    built = materialize(zoo_ref("whisper", 1), CFG)
    features = built.inputs["input_features"]
    cfg = built.config
    assert tuple(features.shape) == (2, cfg.num_mel_bins, 2 * cfg.max_source_positions)
    assert built.inputs["labels"].shape == built.inputs["decoder_input_ids"].shape
    text_only = materialize(zoo_ref("gpt2", 1), CFG).inputs["input_ids"]
    assert text_only.min() >= 4 and text_only.max() < 900  # in vocab, below the special ids


def test_pipeline_tag_picks_the_head():
    assert materialize(_ref(model_type="bert", pipeline_tag="text-classification"), CFG).architecture == (
        "BertForSequenceClassification"
    )
    assert materialize(_ref(model_type="bert", pipeline_tag="token-classification"), CFG).architecture == (
        "BertForTokenClassification"
    )
    assert materialize(_ref(model_type="bert"), CFG).architecture == "BertModel"


def test_config_architectures_win_over_pipeline_tag():
    config = {**SMALL_BERT, "architectures": ["BertForMaskedLM"]}
    built = materialize(_ref(config=config, pipeline_tag="text-classification"), CFG)
    assert built.architecture == "BertForMaskedLM" and built.has_labels


def test_random_weights_keep_full_size_and_tiny_shrinks():
    assert materialize(_ref(config=SMALL_BERT), CFG.replace(weights="random")).config.num_hidden_layers == 3
    assert materialize(_ref(config=SMALL_BERT), CFG).config.num_hidden_layers == 1  # all layers alike: one kept


def test_parameter_cap():
    with pytest.raises(TooLargeError):
        materialize(_ref(config=SMALL_BERT), CFG.replace(weights="random", max_parameters=1000))


def test_unsupported_library():
    with pytest.raises(UnsupportedLibraryError):
        materialize(_ref(library_name="diffusers", model_type="unet"), CFG)


def test_remote_code_is_refused_by_default():
    config = {**SMALL_BERT, "auto_map": {"AutoModel": "modeling_custom.CustomModel"}}
    with pytest.raises(RemoteCodeError):
        materialize(_ref(config=config), CFG)
    with pytest.raises(RemoteCodeError):
        materialize(_ref(config={"model_type": "not_in_transformers", "auto_map": {"AutoConfig": "c.C"}}), CFG)


def test_broken_upstream_default_is_a_config_error():
    with pytest.raises(ConfigError, match="upstream"):
        materialize(zoo_ref("hunyuan_v1_dense", 1), CFG)


def test_missing_input_names_the_argument():
    # A Q-Former takes query embeddings another model produces: no rule can invent them.
    with pytest.raises(InputSynthesisError, match="'query_embeds'"):
        materialize(zoo_ref("blip_2_qformer", 1), CFG)


def test_seeded_builds_are_reproducible():
    a, b = materialize(zoo_ref("gpt2", 1), CFG), materialize(zoo_ref("gpt2", 1), CFG)
    assert all(torch.equal(x, y) for x, y in zip(a.model.state_dict().values(), b.model.state_dict().values()))
    assert torch.equal(a.inputs["input_ids"], b.inputs["input_ids"])


def test_hub_refs_start_from_the_hub_config(monkeypatch):
    from sweeper.libraries.transformers import pretrained

    hub_config = {**SMALL_BERT, "architectures": ["BertForMaskedLM"]}
    monkeypatch.setattr(pretrained, "fetch_config", lambda ref, cfg: hub_config)
    built = materialize(_ref(model_type="bert", source="catalog"), CFG)
    assert built.architecture == "BertForMaskedLM" and built.notes["config_source"] == "hub"


def test_offline_tiny_falls_back_to_the_type_default_and_says_so(monkeypatch):
    from sweeper.libraries.transformers import pretrained

    def unreachable(ref, cfg):
        raise pretrained.HubUnreachableError("offline")

    monkeypatch.setattr(pretrained, "fetch_config", unreachable)
    built = materialize(_ref(model_type="bert", source="catalog"), CFG)
    assert built.notes["config_source"] == "default (hub unreachable)"
    monkeypatch.setattr(pretrained, "fetch_config", lambda ref, cfg: None)
    with pytest.raises(UnsupportedLibraryError):
        materialize(_ref(model_type="bert", source="catalog"), CFG)


def test_a_forward_the_unshrunk_default_repeats_is_no_config_error():
    """The default GLM-4V text config's mrope sections do not fit its rotary width: the
    config builds, its forward fails on meta too. Not a config_error (that is a default
    config that does not build): the model is built, and the note hands the verdict to
    the CPU control (the model's, when the CPU fails the same way)."""
    built = materialize(zoo_ref("glm4v_text", 1), CFG)
    assert built.notes["upstream_control"].startswith("the unshrunk config fails the same way on meta")


@pytest.mark.parametrize("head", ["SpeechT5ForTextToSpeech", "SpeechT5ForSpeechToSpeech", "SpeechT5ForSpeechToText"])
def test_speech_encoder_decoders_get_decoder_inputs(head):
    """microsoft/speecht5_tts was a config_error: its decoder got no input at all. A
    spectrogram decoder gets mel frames and targets; a text decoder, ids."""
    import dataclasses

    built = materialize(dataclasses.replace(zoo_ref("speecht5", 1), architecture=head), CFG)
    assert "probe" not in built.notes and "upstream_control" not in built.notes, built.notes
    decoder = "decoder_input_ids" if head.endswith("ToText") else "decoder_input_values"
    assert decoder in built.inputs and built.has_labels
    output = built.model(**built.inputs)
    # transformers computes no speech-to-speech loss: the mean of the outputs stands in.
    assert (output.loss is not None) or head == "SpeechT5ForSpeechToSpeech"
    assert scalar_loss(output, has_labels=built.has_labels).requires_grad


def test_sequence_classification_of_a_batch_gets_a_pad_token():
    """GPT2ForSequenceClassification was a model_error: "Cannot handle batch sizes > 1 if
    no padding token is defined". A user sets one (the eos token); so do we."""
    import dataclasses

    built = materialize(dataclasses.replace(zoo_ref("gpt2", 1), architecture="GPT2ForSequenceClassification"), CFG)
    assert built.inputs["input_ids"].shape[0] > 1
    assert built.model.config.pad_token_id == built.model.config.eos_token_id
    assert "probe" not in built.notes
    assert built.model(**built.inputs).loss is not None


def test_a_t5_head_that_shifts_labels_right_builds_from_the_default_config():
    """T5's default config lacks decoder_start_token_id, which its released checkpoints set to
    the pad token and T5ForQuestionAnswering reads: built offline it was a model_error."""
    import dataclasses

    built = materialize(dataclasses.replace(zoo_ref("t5", 1), architecture="T5ForQuestionAnswering"), CFG)
    assert built.model.config.decoder_start_token_id == built.model.config.pad_token_id
    assert "probe" not in built.notes and "decoder_start_token_id" in built.notes["config_filled"]
    assert built.model(**built.inputs).start_logits is not None


def test_probe_falls_back_to_a_gentler_shrink_or_layout_that_runs():
    # Speech2Text transposes its features itself: the channels-first guess from its
    # Conv1d front end does not run, the other layout does.
    built = materialize(zoo_ref("speech_to_text", 1), CFG)
    assert built.notes["input_variant"] == 1
    assert built.model(**built.inputs).loss is not None
    # RT-DETR's hybrid encoder links widths no rule knows: the level that keeps widths runs.
    assert materialize(zoo_ref("rt_detr", 1), CFG).notes["shrink"] == "keep_width"


def test_sam2_builds_at_the_tiny_image_size():
    built = materialize(zoo_ref("sam2", 1), CFG)
    assert built.notes["shrink"] == "tiny"
    assert built.inputs["pixel_values"].shape[-2:] == (224, 224)
    out = built.model(**built.inputs)
    assert out.pred_masks.shape[-2:] == (56, 56)
