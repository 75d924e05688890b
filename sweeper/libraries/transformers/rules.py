"""Rule tables: what sizes are called across configs, and the few per-family fixes.

Every rule here is keyed by config attributes (key names, the presence of a field) or
by a forward argument, never by a model name: a new model that reuses a field name gets
the same treatment.
"""

from __future__ import annotations

from typing import Any

# Depth. The first group holds the main stack (``layer_types`` lines up with it).
MAIN_LAYER_KEYS: tuple[str, ...] = ("num_hidden_layers", "num_layers", "n_layer", "n_layers")
LAYER_KEYS: tuple[str, ...] = MAIN_LAYER_KEYS + (
    "encoder_layers", "decoder_layers", "num_decoder_layers", "num_encoder_layers",
    "decoder_num_layers", "encoder_num_layers", "num_text_layers", "num_vision_layers",
    "depth", "num_blocks", "vision_layers", "text_layers", "num_decoder_blocks",
    "num_encoder_blocks", "encoder_depth", "decoder_depth", "num_hidden_blocks",
    "num_self_attends_per_block", "conf_num_hidden_layers",
)
# Per-stage depth lists of hierarchical (conv / windowed) backbones: 1 block per stage.
STAGE_LIST_KEYS: tuple[str, ...] = ("depths", "num_layers_per_stage", "encoder_layers_per_stage")
# Per-stage block counts (EfficientNet, ALIGN's vision tower) and the factor they are scaled
# by. A stage's first block changes width and stride without a skip; the repeats after it add
# the residual and dropout, so a tiny stage keeps up to two blocks (the first and one repeat),
# unscaled: every kind of block, 12 blocks instead of 55 for the default (B7) config.
REPEAT_LIST_KEYS: tuple[str, ...] = ("num_block_repeats",)
DEPTH_SCALE_KEYS: tuple[str, ...] = ("depth_coefficient",)
# Lists of layer indices that must follow the kept layers.
LAYER_INDEX_KEYS: tuple[str, ...] = (
    "out_indices", "full_attn_idxs", "attn_layer_indices", "mlp_only_layers",
    "global_attn_indexes", "vision_feature_layers", "attention_layers", "mamba_layers",
    "moe_layers", "no_rope_layers", "sliding_window_layers", "full_attention_layers",
    "swa_layers", "cross_attention_layers", "intermediate_layers_indices",
)
# "every N-th layer" patterns: period ≤ depth so each kind still appears.
PERIOD_KEYS: tuple[str, ...] = (
    "attn_layer_period", "expert_layer_period", "decoder_sparse_step", "moe_layer_freq",
    "interleave_moe_layer_step", "sliding_window_pattern", "full_attention_interval",
    "cross_attention_frequency", "global_attn_every_n_layers", "hybrid_layer_period",
)
OFFSET_KEYS: tuple[str, ...] = ("attn_layer_offset", "expert_layer_offset", "first_k_dense_replace")

HEAD_KEYS: tuple[str, ...] = (
    "num_attention_heads", "num_heads", "n_head", "n_heads", "encoder_attention_heads",
    "decoder_attention_heads", "attention_heads", "num_attention_heads_text", "conf_num_attention_heads",
)
KV_HEAD_KEYS: tuple[str, ...] = (
    "num_key_value_heads", "num_kv_heads", "n_kv_heads", "multi_query_group_num",
    "num_key_value_heads_text",
)
HEAD_DIM_KEYS: tuple[str, ...] = ("head_dim", "d_kv", "attention_head_dim", "kv_channels", "head_size")
# ``embed_dim`` first: where a config has both, ``hidden_size`` is an output link
# (a vision tower's merger width) and ``embed_dim`` the attention width.
HIDDEN_KEYS: tuple[str, ...] = (
    "embed_dim", "hidden_size", "d_model", "n_embd", "dim", "hidden_dim", "d_embed",
    "embedding_dim", "model_dim", "emb_dim",
)
# Convolutional / recurrent widths with no attention heads to follow.
MAX_HEADLESS_WIDTH = 256

EXPERT_KEYS: tuple[str, ...] = (
    "num_experts", "n_routed_experts", "num_local_experts", "moe_num_experts",
    "num_routed_experts", "n_experts", "zero_expert_num",
)
TOP_K_KEYS: tuple[str, ...] = (
    "num_experts_per_tok", "moe_topk", "top_k", "num_experts_per_token", "moe_k",
    "router_top_k", "num_selected_experts",
)
GROUP_KEYS: tuple[str, ...] = ("n_group", "topk_group", "num_expert_group", "num_expert_groups", "topk_groups")
IMAGE_SIZE_KEYS: tuple[str, ...] = ("image_size", "img_size", "input_size", "crop_size")

_INTERMEDIATE_EXACT = frozenset(
    {"ffn_dim", "encoder_ffn_dim", "decoder_ffn_dim", "n_inner", "d_ff", "ffn_hidden_size",
     "inner_hidden_size", "mlp_dim", "dim_feedforward", "encoder_ffn_size", "decoder_ffn_size",
     "moe_hidden_size"}
)
_NOT_WIDTH = ("vocab", "position", "image", "patch", "kernel", "window", "chunk", "stride",
              "num_", "batch", "conv", "bins", "sampl", "frame", "codebook_size", "head", "token",
              "length", "max_", "channels", "layer")


def is_intermediate_key(key: str) -> bool:
    """Feed-forward widths: scaled by the same ratio as the hidden size."""
    return "intermediate_size" in key or key in _INTERMEDIATE_EXACT or key.endswith("_ffn_hidden_size")


def is_token_id_key(key: str) -> bool:
    """Special token ids (bos/eos/pad/image/audio/...), single or lists."""
    return key.endswith(("_token_id", "_token_ids", "_token_index", "_token_idx")) or key in (
        "decoder_start_token_id", "image_token_index", "video_token_index", "audio_token_index",
    )


def is_vocab_key(key: str) -> bool:
    """Vocabulary sizes of the text stacks."""
    return ("vocab_size" in key or key.endswith("_vocab")) and "type_vocab" not in key


def is_scaled_width_key(key: str) -> bool:
    """Widths that scale with the hidden size (feed-forward, layout embedding parts)."""
    return is_intermediate_key(key) or key in ("coordinate_size", "shape_size")


def is_width_link_key(key: str) -> bool:
    """Fields that may hold another (sub-)config's hidden size by value."""
    if key in HIDDEN_KEYS:
        return True
    if any(part in key for part in _NOT_WIDTH):
        return False
    return any(part in key for part in ("hidden", "dim", "size", "proj", "embd", "width"))


# State-space mixers: heads × head_dim = expand × hidden must hold after the width shrink.
_SSM_FIELDS: tuple[tuple[str, str, str], ...] = (
    ("mamba_n_heads", "mamba_d_head", "mamba_expand"),
    ("num_heads", "head_dim", "expand"),
    ("mamba_num_heads", "mamba_head_dim", "mamba_expand"),
    ("ssm_num_heads", "ssm_head_dim", "ssm_expand"),
)


def fix_ssm_heads(d: dict[str, Any]) -> None:
    """Recompute SSM head counts from the shrunk hidden size."""
    hidden = d.get("hidden_size") or d.get("d_model")
    if not isinstance(hidden, int):
        return
    for heads_key, dim_key, expand_key in _SSM_FIELDS:
        heads, dim, expand = d.get(heads_key), d.get(dim_key), d.get(expand_key)
        if all(isinstance(v, int) and not isinstance(v, bool) for v in (heads, dim, expand)):
            if heads * dim != expand * hidden:
                d[heads_key] = max(1, expand * hidden // dim)
        if "n_groups" in d and isinstance(d.get(heads_key), int) and d[heads_key] % max(1, d["n_groups"]):
            d["n_groups"] = 1


def apply_layer_rules(d: dict[str, Any]) -> None:
    """Depth patterns that must cover exactly the kept layers; required sizes a default
    config leaves unset (a forecaster's horizon) get a small value."""
    _fix_attention_pattern(d)
    if "prediction_length" in d and d["prediction_length"] is None:
        d["prediction_length"] = 8
    shared = d.get("num_kv_shared_layers")
    if isinstance(shared, int) and shared > 0:
        # Shared-KV layers read the cache of an earlier layer of their own type; the few
        # kept layers (one per type) have no producer to spare, so none shares.
        d["num_kv_shared_layers"] = 0


def apply_width_rules(d: dict[str, Any]) -> None:
    """Per-family width consistency fixes keyed by the fields a config has."""
    # Multi-head latent attention: low-rank projections shrink with the width.
    for key in ("q_lora_rank", "kv_lora_rank"):
        if isinstance(d.get(key), int) and d[key] > 128:
            d[key] = 128
    _fix_layout_parts(d)
    _fix_codec_channels(d)
    _fix_depthwise_groups(d)
    if isinstance(d.get("embed_dim"), int) and isinstance(d.get("num_heads"), list):
        d["num_heads"] = [max(1, h // 2) for h in d["num_heads"]]
        d["embed_dim"] = max(16, d["embed_dim"] // 2)



# Codec conv stacks double their channels at every resampling stage; the stage widths
# derive from these fields, which the generic width rule leaves (convolutional configs).
MAX_CODEC_CHANNELS = 1024
MAX_VOCODER_CHANNELS = 256
# A codec whose encoder and decoder state their own base widths (DAC: the encoder doubles
# ``encoder_hidden_size`` at each stage, the decoder halves ``decoder_hidden_size``): each
# stack's widest stage stays at most this.
MAX_CODEC_STACK_CHANNELS = 256


def _fix_codec_channels(d: dict[str, Any]) -> None:
    """Cap a codec's base filters so its widest stage stays ≤ MAX_CODEC_CHANNELS, and a
    vocoder's initial upsampling width (its resblocks halve it per stage)."""
    filters = d.get("num_filters")
    ratios = d.get("downsampling_ratios") or d.get("upsampling_ratios")
    if isinstance(filters, int) and isinstance(ratios, list) and filters << len(ratios) > MAX_CODEC_CHANNELS:
        d["num_filters"] = max(1, MAX_CODEC_CHANNELS >> len(ratios))
    stages = len(ratios) if isinstance(ratios, list) else 0
    encoder, decoder = d.get("encoder_hidden_size"), d.get("decoder_hidden_size")
    if stages and isinstance(encoder, int) and isinstance(decoder, int) and "hidden_size" not in d:
        # (A config with its own ``hidden_size`` is a transformer's: these are its stacks' widths.)
        d["encoder_hidden_size"] = max(1, min(encoder, MAX_CODEC_STACK_CHANNELS >> stages))
        d["decoder_hidden_size"] = max(1 << stages, min(decoder, MAX_CODEC_STACK_CHANNELS))
    initial = d.get("upsample_initial_channel")
    if isinstance(initial, int) and initial > MAX_VOCODER_CHANNELS:
        d["upsample_initial_channel"] = MAX_VOCODER_CHANNELS


def _fix_depthwise_groups(d: dict[str, Any]) -> None:
    """A conv ``*_groups`` count must divide the (shrunk) width it convolves: a count
    that no longer does was the old width (depthwise), so it becomes the new one."""
    hidden = d.get("hidden_size")
    if not isinstance(hidden, int) or hidden <= 0:
        return
    for key, value in list(d.items()):
        if key.endswith("upsample_groups") or key.endswith("downsample_groups"):
            if isinstance(value, int) and value > 0 and hidden % value:
                d[key] = hidden


def is_convolutional(d: dict[str, Any]) -> bool:
    """Conv nets size stages by lists (widths, kernels, channels): their widths stay
    (one block per stage keeps them small) since many fields derive from each other."""
    return any(
        isinstance(v, list) and ("channels" in k or "kernel" in k or "filters" in k or k in STAGE_LIST_KEYS
                                 or k == "hidden_sizes")
        for k, v in d.items()
    )


def _fix_attention_pattern(d: dict[str, Any]) -> None:
    """``attention_types`` = [[pattern, repeats], ...] must cover exactly the layers."""
    types = d.get("attention_types")
    if isinstance(types, list) and types and isinstance(types[0], list) and len(types[0]) == 2:
        pattern = types[0][0]
        d["attention_types"] = [[pattern, 1]]
        for key in MAIN_LAYER_KEYS:
            if isinstance(d.get(key), int):
                d[key] = len(pattern)
        d.pop("attention_layers", None)


def _fix_layout_parts(d: dict[str, Any]) -> None:
    """2-D layout embeddings concatenate 4 coordinate and 2 shape parts into the width."""
    coord, shape, hidden = d.get("coordinate_size"), d.get("shape_size"), d.get("hidden_size")
    heads = d.get("num_attention_heads") or 1
    if not all(isinstance(v, int) for v in (coord, shape, hidden)) or 4 * coord + 2 * shape == hidden:
        return
    part = hidden // 6
    while part > 1 and (6 * part) % heads:
        part -= 1
    d["coordinate_size"] = d["shape_size"] = part
    d["hidden_size"] = 6 * part
