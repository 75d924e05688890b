"""Shrinking real configs: under the parameter cap, every structural flag kept."""

from __future__ import annotations

from typing import Any

import pytest

from sweeper.libraries.transformers.build import tiny_configs
from sweeper.libraries.transformers.configs import config_to_dict, shrink_config_dict
from sweeper.libraries.transformers.models import count_on_meta, transformers_class
from sweeper.sources.zoo import zoo_ref

FEW_MILLION = 20_000_000
# Dense, encoder-decoder, vision, speech, dual-encoder, MoE and hybrid (linear + full
# attention layers) models.
TYPES = ["bert", "llama", "t5", "vit", "whisper", "wav2vec2", "clip", "mixtral", "qwen3_moe", "bailing_hybrid"]


def _default(model_type: str) -> Any:
    from transformers import AutoConfig

    return AutoConfig.for_model(model_type)


def _flags(data: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    """Every bool / str leaf (attention kinds, activations, tied embeddings, rope...)."""
    out: dict[str, Any] = {}
    for key, value in data.items():
        if isinstance(value, dict) and key not in ("id2label", "label2id"):
            out.update(_flags(value, f"{prefix}{key}."))
        elif isinstance(value, (bool, str)) and key != "_name_or_path":
            out[prefix + str(key)] = value
    return out


@pytest.mark.parametrize("model_type", TYPES)
def test_tiny_config_is_small_and_keeps_structure(model_type):
    config = _default(model_type)
    cls = transformers_class(zoo_ref(model_type, 1).architecture)
    level, shrunk = next(tiny_configs(config, cls, 150_000_000))
    assert level == "tiny"
    assert count_on_meta(cls, shrunk) <= FEW_MILLION < count_on_meta(cls, config)
    before, after = config.to_dict(), shrunk.to_dict()
    flags_before, flags_after = _flags(before), _flags(after)
    assert flags_before and {k: flags_after.get(k) for k in flags_before} == flags_before
    assert before.get("rope_parameters") == after.get("rope_parameters")
    assert getattr(config, "tie_word_embeddings", None) == getattr(shrunk, "tie_word_embeddings", None)
    if getattr(config, "layer_types", None):
        assert set(shrunk.layer_types) == set(config.layer_types)


def test_heads_keep_head_dim_and_gqa_ratio():
    config = _default("mistral")  # 32 heads, 8 kv heads, head_dim 128
    shrunk = type(config).from_dict(shrink_config_dict(config_to_dict(config)))
    assert shrunk.num_attention_heads == 4 and shrunk.num_key_value_heads == 1
    assert shrunk.hidden_size // shrunk.num_attention_heads == config.hidden_size // config.num_attention_heads
    assert shrunk.num_hidden_layers == 1 and shrunk.vocab_size == 1024  # its layers are all alike


def test_a_head_width_only_implied_is_narrowed_an_explicit_one_kept():
    implied = shrink_config_dict({"model_type": "x", "hidden_size": 4096, "num_heads": 8})
    assert implied["num_heads"] == 4 and implied["hidden_size"] == 4 * 128
    explicit = shrink_config_dict({"model_type": "x", "hidden_size": 4096, "num_heads": 8, "head_dim": 512})
    assert explicit["hidden_size"] == 4 * 512


def test_xlm_style_embedding_width_shrinks_with_its_heads():
    config = _default("xlm")  # emb_dim 2048, 16 heads
    cls = transformers_class(zoo_ref("xlm", 1).architecture)
    _, shrunk = next(tiny_configs(config, cls, 150_000_000))
    assert shrunk.emb_dim == 512 and shrunk.n_heads == 4
    assert count_on_meta(cls, shrunk) < 10_000_000


def test_moe_keeps_routing_but_fewer_experts():
    config = _default("mixtral")
    shrunk = type(config).from_dict(shrink_config_dict(config_to_dict(config)))
    assert 1 < shrunk.num_local_experts <= 4 and shrunk.num_experts_per_tok <= 2
    assert shrunk.num_experts_per_tok <= shrunk.num_local_experts


def test_special_ids_are_compacted_below_the_tiny_vocab():
    config = _default("llava")  # image token id 32000, vocab 32064
    shrunk = type(config).from_dict(shrink_config_dict(config_to_dict(config)))
    assert shrunk.image_token_id < shrunk.text_config.vocab_size == 1024


def test_cross_config_width_links_follow_the_shrunk_width():
    # A vision tower whose merger outputs the text width, and a projector sized by it.
    data = {"model_type": "x", "projector_hidden_size": 1024,
            "text_config": {"model_type": "t", "hidden_size": 1024, "num_attention_heads": 16},
            "vision_config": {"model_type": "v", "hidden_size": 768, "num_attention_heads": 12,
                              "out_hidden_size": 1024, "intermediate_size": 3072}}
    out = shrink_config_dict(data)
    text, vision = out["text_config"], out["vision_config"]
    assert text["hidden_size"] == 256 and vision["hidden_size"] == 256 and vision["intermediate_size"] == 1024
    assert vision["out_hidden_size"] == text["hidden_size"] == out["projector_hidden_size"]


def test_a_headless_wrapper_repeating_a_tower_width_takes_the_towers_new_width():
    # A multimodal wrapper (no heads of its own) whose hidden size and projection repeat
    # the text width: shrunk alone it would take the headless cap, and the projected
    # image features would no longer fit the text embeddings.
    data = {"model_type": "x", "hidden_size": 2048, "projection_dim": 2048,
            "text_config": {"model_type": "t", "hidden_size": 2048, "num_attention_heads": 8, "head_dim": 256},
            "vision_config": {"model_type": "v", "hidden_size": 1152, "num_attention_heads": 16}}
    out = shrink_config_dict(data)
    assert out["text_config"]["hidden_size"] == 4 * 256
    assert out["hidden_size"] == out["projection_dim"] == out["text_config"]["hidden_size"]
    alone = shrink_config_dict({"model_type": "y", "hidden_size": 2048})
    assert alone["hidden_size"] == 256  # no tower to follow: the headless cap


def test_a_vision_towers_output_width_is_the_text_width():
    # Upstream's default pairs a 3584-wide merger with an 8192-wide text model; real
    # checkpoints agree, and the shrunk tower must hand the text model its own width.
    data = {"model_type": "x",
            "text_config": {"model_type": "t", "hidden_size": 8192, "num_attention_heads": 64},
            "vision_config": {"model_type": "v", "hidden_size": 1280, "num_heads": 16, "out_hidden_size": 3584}}
    out = shrink_config_dict(data)
    assert out["vision_config"]["out_hidden_size"] == out["text_config"]["hidden_size"] == 512


def test_any_resolution_grids_follow_the_shrunk_tile():
    config = _default("llava_next")  # 336-pixel tiles, pinpoints in multiples of 336
    shrunk = shrink_config_dict(config_to_dict(config))
    tile = shrunk["vision_config"]["image_size"]
    assert tile == 224
    assert shrunk["image_grid_pinpoints"][:2] == [[224, 448], [448, 224]]


def test_per_layer_lists_and_overrides_follow_the_kept_layers():
    data = {"model_type": "x", "num_hidden_layers": 6, "hidden_size": 64, "num_attention_heads": 2,
            "layer_types": ["a", "a", "a", "b", "a", "a"], "window": [1, 2, 3, 4, 5, 6],
            "layer_overrides": {"03": {"head_dim": 8}, "05": {"head_dim": 4}}}
    out = shrink_config_dict(data)
    assert out["num_hidden_layers"] == 2 and out["layer_types"] == ["a", "b"]
    assert out["window"] == [1, 4] and out["layer_overrides"] == {"01": {"head_dim": 8}}


@pytest.mark.parametrize("model_type", ["efficientnet", "align"])
def test_efficientnet_stages_keep_their_first_block_and_one_repeat_unscaled(model_type):
    data = config_to_dict(_default(model_type))  # the B7 default: 55 blocks (repeats x depth_coefficient 3.1)
    shrunk = shrink_config_dict(data)
    before, after = data.get("vision_config", data), shrunk.get("vision_config", shrunk)
    assert list(before["num_block_repeats"]) == [1, 2, 2, 3, 3, 4, 1] and before["depth_coefficient"] > 3
    assert list(after["num_block_repeats"]) == [1, 2, 2, 2, 2, 2, 1]
    assert after["depth_coefficient"] == 1.0
    assert len(after["in_channels"]) == len(before["in_channels"])  # every stage kept


def test_stated_feature_map_sizes_follow_the_shrunk_image():
    # SAM 2's neck reads its backbone's maps at image / 4, / 8, / 16, stated by value in a
    # sibling config: left at 1024's, the tiny image no longer fits and the build fell
    # back to full-size 1024² inputs.
    data = config_to_dict(_default("sam2"))
    assert data["vision_config"]["backbone_feature_sizes"] == [[256, 256], [128, 128], [64, 64]]
    shrunk = shrink_config_dict(data)
    assert shrunk["vision_config"]["backbone_config"]["image_size"] == [224, 224]
    assert shrunk["vision_config"]["backbone_feature_sizes"] == [[56, 56], [28, 28], [14, 14]]


@pytest.mark.parametrize("data", [
    {"model_type": "x", "num_hidden_layers": 12, "hidden_size": 64, "num_attention_heads": 2},
    {"model_type": "x", "encoder_layers": 12, "decoder_layers": 6, "d_model": 64, "decoder_sparse_step": 1,
     "mlp_only_layers": [], "first_k_dense_replace": 0, "num_adapter_layers": 3},
    {"model_type": "x", "num_hidden_layers": 6, "hidden_size": 64, "layer_types": ["full_attention"] * 6,
     "max_window_layers": 4, "attention_window": [8] * 6},
])
def test_a_stack_of_alike_layers_keeps_one(data):
    out = shrink_config_dict(data)
    assert all(out[k] == 1 for k in ("num_hidden_layers", "encoder_layers", "decoder_layers") if k in data)


@pytest.mark.parametrize("model_type, layers", [
    ("jamba", 2),          # attention every 8th layer, experts every 2nd: both kinds kept
    ("deepseek_v3", 2),    # dense layers first, then mixture-of-experts
    ("blip_2_qformer", 2),  # cross-attention every 2nd layer
    ("gemma3_text", 2),    # sliding and full attention layers
    ("qwen2_5_vl", 2),     # vision tower: full attention at listed blocks (text stack alike: 1)
])
def test_a_stack_whose_layers_differ_keeps_each_kind(model_type, layers):
    data = config_to_dict(_default(model_type))
    out = shrink_config_dict(data)
    depth = out.get("vision_config", out).get("depth") if model_type == "qwen2_5_vl" else out["num_hidden_layers"]
    assert depth == layers


def test_per_layer_values_that_vary_keep_two_layers():
    data = {"model_type": "x", "num_hidden_layers": 4, "hidden_size": 64, "attention_window": [8, 16, 8, 16]}
    assert shrink_config_dict(data)["num_hidden_layers"] == 2


@pytest.mark.parametrize("model_type", ["qwen2_moe", "qwen3_moe"])
def test_a_moe_stack_with_no_dense_layers_keeps_its_expert_layer(model_type):
    # ``mlp_only_layers`` = [] names no dense layer: it stays empty, or the one layer kept
    # would be dense and the experts (and the ops they need) never run.
    out = shrink_config_dict(config_to_dict(_default(model_type)))
    assert out["num_hidden_layers"] == 1 and out["mlp_only_layers"] == []


def test_a_codec_with_its_own_encoder_and_decoder_widths_builds_tiny():
    # DAC: the encoder doubles encoder_hidden_size per stage, the decoder halves
    # decoder_hidden_size (1536): left as they were, the tiny build had 76 M parameters.
    config = _default("dac")
    shrunk = type(config).from_dict(shrink_config_dict(config_to_dict(config)))
    assert shrunk.encoder_hidden_size << len(shrunk.downsampling_ratios) <= 256 and shrunk.decoder_hidden_size == 256
    cls = transformers_class("DacModel")
    assert count_on_meta(cls, shrunk) < 5_000_000 < count_on_meta(cls, config)
