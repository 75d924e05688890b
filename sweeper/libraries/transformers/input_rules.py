"""Per-family input rules: forward arguments some families need beyond the generic ones.

Each rule is (does it apply?, fix) over the synthesised inputs, keyed by the forward
arguments and config fields a family uses, never by a model name. Rules run before the
generic ones and claim the arguments they build.
"""

from __future__ import annotations

from typing import Any


def main_inputs(model: Any, default: str = "input_ids") -> tuple[str, ...]:
    """The model's main input names: transformers' ``main_input_name`` is one name, or a
    list of them (OneFormer's ``["pixel_values", "task_inputs"]``)."""
    main = getattr(model, "main_input_name", default)
    return tuple(main) if isinstance(main, (list, tuple)) else (main,)


def _time_series(ctx: Any, model: Any) -> None:
    """Forecasters: past values cover context + lags; future values give the loss."""
    import torch

    cfg, b = ctx.config, ctx.batch
    lags = getattr(cfg, "lags_sequence", None) or [0]
    length = int(cfg.context_length) + int(max(lags))
    # Channel-mixing forecasters (num_input_channels) take (B, T, C); univariate ones
    # (input_size 1, or no channel field at all) take (B, T).
    channels = getattr(cfg, "num_input_channels", None) or getattr(cfg, "input_size", None) or 1
    multichannel = getattr(cfg, "num_input_channels", None) is not None or int(channels) > 1
    shape = (b, length, int(channels)) if multichannel else (b, length)
    ctx.inputs["past_values"] = torch.randn(shape, generator=ctx.generator)
    if "past_observed_mask" in ctx.params:
        ctx.inputs["past_observed_mask"] = torch.ones(shape)
    features = int(getattr(cfg, "num_time_features", 0) or 0)
    horizon = getattr(cfg, "prediction_length", None)
    for name, steps in (("past_time_features", length), ("future_time_features", horizon)):
        if name in ctx.params and steps:
            ctx.inputs[name] = torch.randn((b, int(steps), features), generator=ctx.generator)
    if "future_values" in ctx.params and horizon:
        ctx.inputs["future_values"] = torch.randn((b, int(horizon), *shape[2:]), generator=ctx.generator)
    for name in ("static_categorical_features", "static_real_features"):
        ctx.inputs.pop(name, None)


def _grid_arg(ctx: Any) -> str | None:
    return next((n for n in ("grid_thw", "image_grid_thw") if n in ctx.params), None)


def _patch_arg(ctx: Any) -> str | None:
    return next((n for n in ("hidden_states", "pixel_values") if n in ctx.params), None)


def _is_patch_tower(ctx: Any, model: Any) -> bool:
    """Vision towers fed flattened patches plus a (t, h, w) grid per image (the grid is
    a required argument; multimodal LMs take it optionally and run text-only)."""
    grid = _grid_arg(ctx)
    return grid is not None and _patch_arg(ctx) is not None and ctx.params[grid].default is ctx.params[grid].empty


def patch_geometry(ctx: Any) -> tuple[int, int, int, int]:
    """(patch, temporal patch, channels, side) of one image as patch rows: the side a
    multiple of the tower's spatial merge window."""
    patch = int(ctx.lookup("patch_size", (), 14))
    temporal = int(ctx.lookup("temporal_patch_size", (), 1) or 1)
    channels = int(ctx.lookup("in_channels", (), None) or ctx.lookup("num_channels", (), 3))
    side = 2 * int(ctx.lookup("spatial_merge_size", (), 2) or 2)
    return patch, temporal, channels, side


def _patch_tower(ctx: Any, model: Any) -> None:
    """(images·t·h·w, C·tp·p·p) patches and their grids; h, w a multiple of the merge."""
    import torch

    patch, temporal, channels, side = patch_geometry(ctx)
    grid = torch.tensor([[1, side, side]] * ctx.batch)
    # Flattened rows by default; the alternative keeps each patch as a (C, p, p) image
    # for towers whose embedding is a Conv2d over single patches.
    ctx.ambiguous = True
    if ctx.variant == 1:
        shape: tuple[int, ...] = (ctx.batch * side * side, channels * temporal, patch, patch)
    else:
        shape = (ctx.batch * side * side, channels * temporal * patch * patch)
    ctx.inputs[_patch_arg(ctx)] = torch.randn(shape, generator=ctx.generator)
    ctx.inputs[_grid_arg(ctx)] = grid


def _native_patches(ctx: Any, model: Any) -> None:
    """Native-resolution towers: (B, N, C·p·p) patches, their (h, w) grid and a mask."""
    import torch

    patch = int(ctx.lookup("patch_size", (), 16))
    channels = int(ctx.lookup("num_channels", (), 3))
    side = int(int(ctx.lookup("num_patches", (), 256)) ** 0.5)
    ctx.inputs["pixel_values"] = torch.randn((ctx.batch, side * side, channels * patch * patch), generator=ctx.generator)
    ctx.inputs["spatial_shapes"] = torch.tensor([[side, side]] * ctx.batch)
    if "pixel_attention_mask" in ctx.params:
        ctx.inputs["pixel_attention_mask"] = torch.ones((ctx.batch, side * side), dtype=torch.long)


def _region_features(ctx: Any, model: Any) -> None:
    """Detector region features and boxes for cross-modality encoders."""
    import torch

    regions = 8
    ctx.inputs["visual_feats"] = torch.randn((ctx.batch, regions, int(ctx.config.visual_feat_dim)), generator=ctx.generator)
    ctx.inputs["visual_pos"] = torch.rand((ctx.batch, regions, int(ctx.config.visual_pos_dim)), generator=ctx.generator)


def _language_ids(ctx: Any, model: Any) -> None:
    """Per-language adapters route on a language id (the first configured language)."""
    import torch

    ctx.inputs["lang_ids"] = torch.zeros((ctx.batch,), dtype=torch.long)


def _videos(ctx: Any, model: Any) -> None:
    """Video towers: (B, frames, C, H, W) clips."""
    import torch

    from sweeper.libraries.transformers.signals import image_hw

    frames = int(ctx.lookup("num_frames", (), 8) or 8)
    channels = int(ctx.lookup("num_channels", (), 3))
    h, w = image_hw(ctx)
    ctx.inputs["pixel_values_videos"] = torch.randn((ctx.batch, frames, channels, h, w), generator=ctx.generator)


def _generic_inputs(ctx: Any, model: Any) -> None:
    """A forward taking plain ``inputs``: what its encoder's main input rule builds
    (speech encoder-decoders), else (B, S, width) embeddings for a modality-agnostic
    encoder (the probe fits the width to the layer reading them)."""
    import torch

    from sweeper.libraries.transformers.signals import RULES, token_ids


    rule = RULES.get(main_inputs(getattr(model, "encoder", None), "")[0])
    if rule is not None:
        ctx.inputs["inputs"] = rule(ctx)
        return
    if any(isinstance(m, torch.nn.Embedding) and "preprocessor" in n for n, m in model.named_modules()):
        ctx.inputs["inputs"] = token_ids(ctx, (ctx.batch, ctx.seq))  # a text preprocessor embeds ids
        return
    width = int(ctx.lookup("d_model", (), None) or ctx.lookup("hidden_size", (), 64))
    ctx.inputs["inputs"] = torch.randn((ctx.batch, ctx.seq, width), generator=ctx.generator)


def _trajectories(ctx: Any, model: Any) -> None:
    """Offline-RL trajectories: states, actions, rewards and returns per step, the
    steps' timesteps within the episode, and a mask over the steps."""
    import torch

    cfg, b, s, g = ctx.config, ctx.batch, ctx.seq, ctx.generator
    ctx.inputs["states"] = torch.randn((b, s, int(cfg.state_dim)), generator=g)
    ctx.inputs["actions"] = torch.randn((b, s, int(cfg.act_dim)), generator=g)
    for name in ("rewards", "returns_to_go"):
        ctx.inputs[name] = torch.randn((b, s, 1), generator=g)
    ctx.inputs["timesteps"] = torch.arange(s).expand(b, s).clone()
    ctx.inputs["attention_mask"] = torch.ones((b, s), dtype=torch.long)


def _retrieved_contexts(ctx: Any, model: Any) -> None:
    """Retrieval-augmented generators without a retriever take the retrieved passages
    themselves: ``n_docs`` contexts per question (generator ids) and their scores."""
    import torch

    from sweeper.libraries.transformers.signals import token_ids

    docs = int(ctx.config.n_docs)
    ids = token_ids(ctx, (ctx.batch * docs, ctx.seq), sides=("generator",))
    ctx.inputs["context_input_ids"] = ids
    ctx.inputs["context_attention_mask"] = torch.ones_like(ids)
    ctx.inputs["doc_scores"] = torch.randn((ctx.batch, docs), generator=ctx.generator)


def _eos_terminated(ctx: Any, model: Any) -> None:
    """Encoder-decoder classifiers pool the decoder state at the eos token and need the
    same count of eos in every row: each row ends with one, as a tokenizer ends it."""
    from sweeper.libraries.transformers.signals import token_ids

    ids = token_ids(ctx, (ctx.batch, ctx.seq))
    ids[:, -1] = int(ctx.config.eos_token_id)
    ctx.inputs["input_ids"] = ids


def _pools_at_eos(ctx: Any, model: Any) -> bool:
    eos = getattr(ctx.config, "eos_token_id", None)
    return (ctx.head_kind == "SEQUENCE_CLASSIFICATION" and "input_ids" in ctx.params
            and bool(getattr(ctx.config, "is_encoder_decoder", False)) and isinstance(eos, int))


def _query_placeholders(ctx: Any, model: Any) -> None:
    """Query-token bridges (Q-Former, perceiver resamplers) put a fixed number of query
    outputs per sample into the text: after its first token, at image placeholder ids
    or at the positions an image-embedding mask marks."""
    import torch

    from sweeper.libraries.transformers.signals import token_ids

    queries = _query_count(ctx)
    ids = token_ids(ctx, (ctx.batch, ctx.seq + queries))
    span = slice(1, 1 + queries)
    token = _image_token(ctx)
    if token is not None:
        ids[:, span] = token
    if "image_embeds_position_mask" in ctx.params:
        mask = torch.zeros_like(ids)
        mask[:, span] = 1
        ctx.inputs["image_embeds_position_mask"] = mask
    ctx.inputs["input_ids"] = ids


def _query_count(ctx: Any) -> int | None:
    for key in ("num_query_tokens", "latent_query_num"):
        value = getattr(ctx.config, key, None)
        if isinstance(value, int) and not isinstance(value, bool) and value > 0:
            return value
    return None


def _image_token(ctx: Any) -> int | None:
    value = ctx.lookup("image_token_index", ("text_config",)) or ctx.lookup("image_token_id", ("text_config",))
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _takes_queries(ctx: Any, model: Any) -> bool:
    marked = _image_token(ctx) is not None or "image_embeds_position_mask" in ctx.params
    return _query_count(ctx) is not None and marked and {"input_ids", "pixel_values"} <= set(ctx.params)


def _spectrogram_decoder(ctx: Any, model: Any) -> None:
    """Encoder-decoders that decode spectrograms (text-to-speech, speech-to-speech): the
    decoder reads mel frames, and its loss wants target frames, ``reduction_factor``
    of them per decoder step. Without them the decoder has no input at all."""
    import torch

    from sweeper.libraries.transformers.signals import DECODER_LEN

    mels = int(ctx.config.num_mel_bins)
    factor = int(getattr(ctx.config, "reduction_factor", 1) or 1)
    ctx.inputs["decoder_input_values"] = torch.randn((ctx.batch, DECODER_LEN, mels), generator=ctx.generator)
    if "labels" in ctx.params:
        ctx.inputs["labels"] = torch.randn((ctx.batch, DECODER_LEN * factor, mels), generator=ctx.generator)


def _decodes_spectrograms(ctx: Any, model: Any) -> bool:
    mels = getattr(ctx.config, "num_mel_bins", None)
    return "decoder_input_values" in ctx.params and isinstance(mels, int) and mels > 0


def _pad_token(ctx: Any, model: Any) -> None:
    """A classifier that pools each row at its last non-pad token cannot batch rows
    without a pad token (GPT-2's ``Cannot handle batch sizes > 1``): a user sets one, the
    eos token as the model's docs say, and so do we."""
    eos = ctx.config.eos_token_id
    ctx.config.pad_token_id = eos if isinstance(eos, int) and not isinstance(eos, bool) else 0


def _needs_pad_token(ctx: Any, model: Any) -> bool:
    return (ctx.head_kind == "SEQUENCE_CLASSIFICATION" and ctx.batch > 1 and "input_ids" in ctx.params
            and hasattr(ctx.config, "pad_token_id") and ctx.config.pad_token_id is None
            and not getattr(ctx.config, "is_encoder_decoder", False))


def _required(ctx: Any, name: str) -> bool:
    param = ctx.params.get(name)
    return param is not None and param.default is param.empty


INPUT_RULES: tuple[tuple[Any, Any], ...] = (
    (_needs_pad_token, _pad_token),
    (_decodes_spectrograms, _spectrogram_decoder),
    (lambda ctx, model: "spatial_shapes" in ctx.params and "pixel_values" in ctx.params, _native_patches),
    (lambda ctx, model: "visual_feats" in ctx.params and hasattr(ctx.config, "visual_feat_dim"), _region_features),
    (lambda ctx, model: "lang_ids" in ctx.params and getattr(ctx.config, "languages", None), _language_ids),
    (lambda ctx, model: _required(ctx, "pixel_values_videos"), _videos),
    (lambda ctx, model: "past_values" in ctx.params and hasattr(ctx.config, "context_length"), _time_series),
    (_is_patch_tower, _patch_tower),
    (lambda ctx, model: {"context_input_ids", "doc_scores"} <= set(ctx.params)
     and isinstance(getattr(ctx.config, "n_docs", None), int), _retrieved_contexts),
    (_pools_at_eos, _eos_terminated),
    (_takes_queries, _query_placeholders),
    (lambda ctx, model: "states" in ctx.params and hasattr(ctx.config, "state_dim"), _trajectories),
    (lambda ctx, model: _required(ctx, "inputs") or (
        "inputs" in ctx.params and getattr(model, "main_input_name", None) == "inputs"), _generic_inputs),
)


def adjust_inputs(ctx: Any, model: Any) -> None:
    """Apply every input rule whose condition holds for this model and config."""
    for applies, fix in INPUT_RULES:
        if applies(ctx, model):
            fix(ctx, model)
