"""Input rules: driven by the forward signature and the config, not model names."""

from __future__ import annotations

import pytest
import torch

from sweeper.libraries.transformers.inputs import make_inputs
from sweeper.settings.errors import InputSynthesisError


class _Config:
    vocab_size = 500
    type_vocab_size = 2
    num_labels = 3
    pad_token_id = 7
    is_encoder_decoder = False

    def to_dict(self):
        return {"pad_token_id": self.pad_token_id, "vocab_size": self.vocab_size}


class _Classifier(torch.nn.Module):
    main_input_name = "input_ids"

    def forward(self, input_ids=None, attention_mask=None, token_type_ids=None, labels=None):
        raise NotImplementedError


class _Odd(torch.nn.Module):
    main_input_name = "input_ids"

    def forward(self, input_ids, weird_arg, attention_mask=None):
        raise NotImplementedError


def test_text_classifier_inputs_and_labels():
    inputs, has_labels = make_inputs(_Classifier(), _Config(), head_kind="SEQUENCE_CLASSIFICATION", batch=3, seq=5)
    assert set(inputs) == {"input_ids", "attention_mask", "token_type_ids", "labels"}
    ids = inputs["input_ids"]
    assert ids.shape == (3, 5) and ids.min() >= 4 and ids.max() < 500 and not (ids == 7).any()
    assert inputs["labels"].shape == (3,) and inputs["labels"].max() < 3 and has_labels


def test_required_argument_without_a_rule_is_named():
    with pytest.raises(InputSynthesisError, match="weird_arg") as info:
        make_inputs(_Odd(), _Config(), head_kind=None)
    assert info.value.op == "weird_arg"


def test_variant_needs_an_ambiguous_signal():
    with pytest.raises(LookupError):
        make_inputs(_Classifier(), _Config(), head_kind=None, variant=1)


class _TaskConditionedConfig:
    """OneFormer's shape: an image model whose forward also reads a tokenized task prompt."""

    image_size = 32
    num_channels = 3
    task_seq_len = 9
    is_encoder_decoder = False

    def to_dict(self):
        return {"task_seq_len": self.task_seq_len}


class _TaskConditioned(torch.nn.Module):
    # transformers lets main_input_name be a list (OneFormerForUniversalSegmentation).
    main_input_name = ["pixel_values", "task_inputs"]

    def forward(self, pixel_values, task_inputs, text_inputs=None, pixel_mask=None):
        raise NotImplementedError


def test_a_list_of_main_inputs_builds_each_of_them():
    inputs, _ = make_inputs(_TaskConditioned(), _TaskConditionedConfig(), head_kind="UNIVERSAL_SEGMENTATION", batch=2)
    assert inputs["pixel_values"].shape == (2, 3, 32, 32)
    assert inputs["task_inputs"].shape == (2, 9)  # the config's task length
    assert "text_inputs" not in inputs  # optional, and only read in training
