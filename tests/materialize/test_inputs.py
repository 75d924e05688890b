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
