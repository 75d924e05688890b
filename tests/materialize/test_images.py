"""Vision-language models get images and the placeholder tokens their features fill."""

from __future__ import annotations

import math

import pytest
import torch

from sweeper.libraries.transformers import materialize
from sweeper.libraries.transformers.images import image_token
from sweeper.settings.config import SweepConfig
from sweeper.sources.zoo import zoo_ref

CFG = SweepConfig()


# Pixel images (llava, paligemma, internvl), an encoder-decoder (florence2), patch rows
# with their grid (qwen2_5_vl; qwen3_vl also marks each position's modality), and
# any-resolution crops with the image size (llava_next).
@pytest.mark.parametrize(
    "model_type", ["llava", "paligemma", "internvl", "florence2", "qwen2_5_vl", "qwen3_vl", "llava_next"]
)
def test_vision_language_models_run_their_vision_tower(model_type):
    built = materialize(zoo_ref(model_type, 1), CFG)
    token = image_token(built.config)
    ids = built.inputs["input_ids"]
    per_sample = (ids == token).sum(dim=1)
    note = built.notes["images"]
    assert note == f"one image per sample, {int(per_sample[0])} placeholder tokens each"
    assert per_sample.min() == per_sample.max() > 0 and "pixel_values" in built.inputs
    labels = built.inputs["labels"]
    if labels.shape == ids.shape:  # decoder-only: no loss on image positions
        assert (labels[ids == token] == -100).all()
    out = built.model(**built.inputs)
    assert math.isfinite(out.loss.item())
    out.loss.backward()
    # The loss reaches the vision tower: the images were read, not ignored.
    vision = [p for n, p in built.model.named_parameters() if "vision" in n or "visual" in n]
    assert vision and any(p.grad is not None and p.grad.abs().sum() > 0 for p in vision)


def test_a_layout_no_rule_knows_keeps_the_text_only_run_and_says_why():
    # Idefics3-style towers take several crops per image, split by the processor.
    built = materialize(zoo_ref("idefics3", 1), CFG)
    assert "pixel_values" not in built.inputs
    assert built.notes["images"].startswith("text-only: no image layout runs (")
    assert torch.isfinite(built.model(**built.inputs).loss)


def test_dual_encoders_are_left_to_the_input_rules():
    built = materialize(zoo_ref("clip", 1), CFG)
    assert "images" not in built.notes and "pixel_values" in built.inputs
