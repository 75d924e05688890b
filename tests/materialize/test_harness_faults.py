"""Failures the top-1000 sweep recorded that were the materializer's own (head lookup,
inputs, shrink), each fixed by a general rule: the model type, with the head its
catalog row's pipeline tag picks, builds tiny and runs forward and backward on the CPU.

Refs carry no config, so the type's default config is the start, as in an offline sweep.
"""

from __future__ import annotations

import math

import pytest
import torch

from sweeper.libraries.transformers import materialize
from sweeper.records import ModelRef
from sweeper.settings.config import SweepConfig

CFG = SweepConfig()


def _ref(model_type: str, pipeline_tag: str | None) -> ModelRef:
    return ModelRef(model_id=f"zoo/{model_type}", rank=1, pipeline_tag=pipeline_tag,
                    library_name="transformers", model_type=model_type, source="zoo")


def _loss(out, has_labels):
    if has_labels and getattr(out, "loss", None) is not None:
        return out.loss
    values = out.values() if hasattr(out, "values") else out
    floats = [v for v in values if torch.is_tensor(v) and v.is_floating_point() and v.requires_grad]
    return sum(v.float().mean() for v in floats)


def _runs_and_trains(built, why):
    loss = _loss(built.model(**built.inputs), built.has_labels)
    assert math.isfinite(float(loss.detach())), why
    loss.backward()
    assert any(p.grad is not None for p in built.model.parameters()), why


@pytest.mark.parametrize(
    ("model_type", "tag", "architecture", "why"),
    [
        ("vitmatte", None, "VitMatteForImageMatting", "a type only in the image-matting mapping"),
        ("vitpose", "keypoint-detection", "VitPoseForPoseEstimation", "a type only in the pose mapping"),
        ("vision-encoder-decoder", "document-question-answering", "VisionEncoderDecoderModel",
         "a tag the type has no head for falls back to the type's own head"),
        ("rag", None, "RagSequenceForGeneration",
         "a type in no auto mapping: its modeling module's classes; retrieved passages as inputs"),
    ],
)
def test_types_outside_the_task_mappings_get_their_own_class(model_type, tag, architecture, why):
    built = materialize(_ref(model_type, tag), CFG)
    assert built.architecture == architecture, why
    _runs_and_trains(built, why)


def test_sizes_a_default_config_leaves_unset_are_filled():
    from sweeper.libraries.transformers.configs import shrink_config_dict

    text = shrink_config_dict({"hidden_size": 64, "vocab_size": None, "pad_token_id": None})
    assert text["vocab_size"] > 0 and text["pad_token_id"] == 0
    moe = shrink_config_dict({"hidden_size": 64, "n_routed_experts": 64, "num_experts_per_tok": None})
    assert moe["num_experts_per_tok"] == 2
    # A composite config's own vocab (its generator's is the one used) stays unset.
    assert shrink_config_dict({"vocab_size": None, "n_docs": 5})["vocab_size"] is None


@pytest.mark.parametrize(
    ("model_type", "tag", "why"),
    [
        ("deepseek_v2", "text-generation", "the default routes to num_experts_per_tok=None experts"),
        ("esm", "fill-mask", "the default has vocab_size and pad_token_id None"),
    ],
)
def test_default_configs_with_unset_sizes_build_and_run(model_type, tag, why):
    _runs_and_trains(materialize(_ref(model_type, tag), CFG), why)


@pytest.mark.parametrize(
    ("model_type", "tag", "why"),
    [
        ("bart", "zero-shot-classification",
         "an encoder-decoder classifier pools at one eos per row; its decoder runs on the input ids"),
        ("musicgen", "text-to-audio", "decoder ids laid out one row per codebook"),
        ("blip-2", "image-text-to-text", "Q-Former queries fill image placeholders (unset in the default)"),
        ("instructblip", "image-text-to-text", "Q-Former queries fill image placeholders (unset in the default)"),
    ],
)
def test_inputs_fit_what_the_forward_reads(model_type, tag, why):
    built = materialize(_ref(model_type, tag), CFG)
    assert "probe" not in built.notes, why
    _runs_and_trains(built, why)
    vision = getattr(built.model, "vision_model", None)
    if vision is not None:
        # The image features reach the loss: the vision tower trains too.
        assert any(p.grad is not None and p.grad.abs().sum() > 0 for p in vision.parameters()), why


def test_a_vqa_model_that_decodes_answers_gets_answer_ids_and_labels():
    built = materialize(_ref("blip", "visual-question-answering"), CFG)
    assert built.architecture == "BlipForQuestionAnswering"
    assert built.has_labels and built.inputs["labels"].shape == built.inputs["decoder_input_ids"].shape
    _runs_and_trains(built, "answers decoded from the question and image")


@pytest.mark.parametrize(
    ("model_type", "tag", "why"),
    [
        ("kosmos-2", "image-to-text", "latent queries at the positions an image-embedding mask marks"),
        ("clap", "feature-extraction",
         "(B, 1, frames, mels) spectrogram images; a staged audio tower keeps its derived width"),
        ("dpt", "depth-estimation", "one layer per backbone output index, as the neck reads"),
    ],
)
def test_vision_and_audio_heads_get_the_layout_they_read(model_type, tag, why):
    built = materialize(_ref(model_type, tag), CFG)
    assert "probe" not in built.notes and built.notes.get("shrink") == "tiny", why
    _runs_and_trains(built, why)


def test_backbone_output_indices_keep_one_layer_each():
    from sweeper.libraries.transformers.configs import shrink_config_dict

    out = shrink_config_dict({"hidden_size": 768, "num_attention_heads": 12, "num_hidden_layers": 12,
                              "backbone_out_indices": [2, 5, 8, 11], "neck_hidden_sizes": [96, 192, 384, 768]})
    assert out["num_hidden_layers"] == 4 and out["backbone_out_indices"] == [0, 1, 2, 3]


class _Caching(torch.nn.Module):
    """Caches a weight-derived tensor in a plain attribute, as codec codebooks do."""

    def __init__(self):
        super().__init__()
        self.weight = torch.nn.Parameter(torch.ones(3))
        self._derived = None

    def forward(self, x):
        if self._derived is None:
            self._derived = self.weight * 2
        self.scratch = x.sum()
        return x * self._derived


def test_probe_forwards_leave_no_cached_tensors_behind():
    from sweeper.libraries.pristine import pristine

    module = _Caching()
    with pristine(module):
        module(torch.ones(3))
    assert module._derived is None and not hasattr(module, "scratch")
    module.to("meta")  # what the device move does; the cache is then built there
    assert module(torch.ones(3, device="meta")).device.type == "meta"


def test_a_codec_built_and_probed_on_the_cpu_keeps_no_cpu_cache():
    built = materialize(_ref("mimi", "feature-extraction"), CFG)
    caches = [m._embed for m in built.model.modules() if hasattr(m, "_embed")]
    assert caches and all(c is None for c in caches), "the probe's CPU caches would not follow .to(device)"
    _runs_and_trains(built, "mimi")
