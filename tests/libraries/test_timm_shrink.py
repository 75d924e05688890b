"""Tiny timm builds of families without size arguments: cut to two blocks per stage."""

from __future__ import annotations

import importlib.util

import pytest
import torch

from sweeper.records import ModelRef
from sweeper.settings.config import SweepConfig

pytestmark = pytest.mark.skipif(importlib.util.find_spec("timm") is None, reason="the libraries extra is not installed")


def _build(model_id: str, weights: str = "tiny"):
    from sweeper.libraries.timm.library import Timm

    ref = ModelRef(model_id, 1, library_name="timm", source="catalog")
    return Timm().build(ref, SweepConfig.of(device="cpu", weights=weights))


def _stage_lengths(built) -> list[int]:
    return [len(stage) for stage in built.model.model.blocks]  # the timm model inside its loss wrapper


def test_an_efficientnet_keeps_two_blocks_per_stage_and_still_runs():
    import timm

    with torch.device("meta"):
        full = [len(stage) for stage in timm.create_model("efficientnet_b0", pretrained=False).blocks]
    built = _build("timm/efficientnet_b0.ra_in1k")
    cut = _stage_lengths(built)
    assert full == [1, 2, 2, 3, 3, 4, 1]
    assert cut == [min(n, 2) for n in full]  # every stage keeps its first block and one repeat
    assert built.notes["shrink"] == "blocks per stage <= 2"
    loss = built.model(**built.inputs)
    loss = loss if isinstance(loss, torch.Tensor) else loss["loss"]
    assert torch.isfinite(loss).all()


def test_a_mobilenetv3_is_cut_the_same_way_and_resnets_keep_their_size_arguments():
    mobilenet = _build("timm/mobilenetv3_small_100.lamb_in1k")
    assert max(_stage_lengths(mobilenet)) == 2
    resnet = _build("timm/resnet50.a1_in1k")
    assert resnet.notes["shrink"] == "layers"


def test_a_fastvit_tower_keeps_one_block_per_stage():
    from sweeper.libraries.timm.library import _tiny_args

    assert _tiny_args("fastvit_mci2") == {"layers": (1, 1, 1, 1)}  # MobileCLIP's image tower: 4, 12, 24, 4 blocks


def test_a_transformers_timm_backbone_is_built_tiny_and_timm_is_left_as_it_was():
    import timm

    from sweeper.libraries import build
    from sweeper.sources.zoo import zoo_ref

    create = timm.create_model
    built = build(zoo_ref("detr", 1), SweepConfig.of(device="cpu"))
    resnet = next(m for m in built.model.modules() if type(m).__name__ == "FeatureListNet")
    assert [len(getattr(resnet, f"layer{i}")) for i in range(1, 5)] == [1, 1, 1, 1]  # resnet50: 3, 4, 6, 3
    assert timm.create_model is create
