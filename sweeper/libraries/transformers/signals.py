"""Signals built from the config: token ids, images, audio, masks (one rule per argument).

``InputContext`` is what every rule sees: the config (searched top-down through its
sub-configs), batch and sequence sizes, a seeded generator and the forward's parameters.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from sweeper.libraries.transformers.configs import SPECIAL_ID_BASE

DECODER_LEN = 8
AUDIO_SAMPLES = 16000
FEATURE_FRAMES = 64
# Sub-configs searched for a field, text-side first (the ids feed the text stack).
TEXT_SIDE = ("text_config", "decoder", "language_config", "llm_config", "text_encoder")
VISION_SIDE = ("vision_config", "encoder", "backbone_config", "vision_encoder", "image_config")
AUDIO_SIDE = ("audio_config", "encoder", "speech_config", "audio_encoder")


def _get(holder: Any, key: str) -> Any:
    """``getattr`` that treats per-layer attributes (which refuse global reads) as absent."""
    try:
        return getattr(holder, key, None) if holder is not None else None
    except Exception:  # noqa: BLE001
        return None


@dataclass
class InputContext:
    """What the rules see: the config, batch and sequence sizes, the generator."""

    config: Any
    batch: int
    seq: int
    generator: Any
    params: dict[str, inspect.Parameter]
    inputs: dict[str, Any] = field(default_factory=dict)
    # in_channels of the model's Conv1d layers: tells channels-first feature layouts.
    conv1d_in_channels: frozenset[int] = frozenset()
    # 0: the preferred layout of each signal; 1: the other one (features transposed,
    # waveforms with a channel axis); 2: signals without optional masks. Build tries
    # them in turn when the first does not run.
    variant: int = 0
    ambiguous: bool = False
    head_kind: str | None = None
    # Where time runs in the audio features built (masks follow it).
    frame_axis: int = -1

    def lookup(self, key: str, sides: tuple[str, ...] = (), default: Any = None) -> Any:
        """A config field: the top config, then the given sub-configs, then any other."""
        for holder in (self.config, *(_get(self.config, s) for s in sides), *_sub_configs(self.config)):
            value = _get(holder, key)
            if value is not None:
                return value
        return default


    def special_ids(self) -> set[int]:
        """Every special token id the config names (avoided in sampled input ids)."""
        found: set[int] = set()
        for holder in (self.config, *(getattr(self.config, s, None) for s in TEXT_SIDE)):
            for key, value in (holder.to_dict() if hasattr(holder, "to_dict") else {}).items():
                if key.endswith(("_token_id", "_token_index", "_token_ids")):
                    for v in value if isinstance(value, list) else [value]:
                        if isinstance(v, int):
                            found.add(v)
        return found


def _sub_configs(config: Any) -> list[Any]:
    """Nested configs (text, vision, audio, encoder, ...) in declaration order."""
    names = list(getattr(config, "sub_configs", {}) or {}) + [
        k for k, v in vars(config).items() if hasattr(v, "to_dict") and hasattr(v, "model_type")
    ]
    return [_get(config, n) for n in dict.fromkeys(names) if _get(config, n) is not None]


def token_ids(ctx: InputContext, shape: tuple[int, ...], *, sides: tuple[str, ...] = TEXT_SIDE) -> Any:
    """Ids in [4, min(vocab, 900)) that are no special token (no image/audio placeholders)."""
    import torch

    vocab = int(ctx.lookup("vocab_size", sides, 1000) or 1000)
    high = max(5, min(vocab, SPECIAL_ID_BASE))
    ids = torch.randint(4, high, shape, generator=ctx.generator)
    for special in ctx.special_ids():
        if 4 <= special < high:
            ids[ids == special] = 4 if special != 4 else 5
    return ids


def image_hw(ctx: InputContext) -> tuple[int, int]:
    size = ctx.lookup("image_size", VISION_SIDE, 224)
    if isinstance(size, dict):
        size = [size.get("height", 224), size.get("width", 224)]
    if isinstance(size, (list, tuple)):
        return int(size[0]), int(size[-1])
    return int(size), int(size)


def pixel_values(ctx: InputContext) -> Any:
    """(B, C, H, W) at the config's image size; (B, T, C, H, W) when it has frames."""
    import torch

    channels = int(ctx.lookup("num_channels", VISION_SIDE, 3))
    h, w = image_hw(ctx)
    frames = ctx.lookup("num_frames", VISION_SIDE)
    if ctx.head_kind == "KEYPOINT_MATCHING":
        frames = 2  # matchers take image pairs
    shape = (ctx.batch, int(frames), channels, h, w) if isinstance(frames, int) else (ctx.batch, channels, h, w)
    if len(shape) == 4:
        # Matchers, multi-image and video models take an images-per-sample axis the
        # config need not name: the variant adds it (a pair: two frames, two images).
        ctx.ambiguous = True
        if ctx.variant == 1:
            shape = (ctx.batch, 2, channels, h, w)
    return torch.randn(shape, generator=ctx.generator)


def input_features(ctx: InputContext) -> Any:
    """Log-mel features: (B, mels, 2·max_source_positions) for conv-front encoders with a
    fixed source length; (B, frames, features) for the others."""
    import torch

    mels = ctx.lookup("num_mel_bins", AUDIO_SIDE)
    sources = ctx.lookup("max_source_positions", AUDIO_SIDE)
    if isinstance(mels, int) and isinstance(sources, int):
        return torch.randn((ctx.batch, mels, 2 * sources), generator=ctx.generator)
    if isinstance(mels, int) and isinstance(ctx.lookup("spec_size", AUDIO_SIDE), int):
        # Spectrogram-image encoders (a square ``spec_size`` image folded from the mel
        # frames) read (B, channels, frames, mels): one channel, four when they fuse
        # a global view with three local crops.
        channels = 4 if ctx.lookup("enable_fusion", AUDIO_SIDE) else 1
        ctx.frame_axis = 2
        return torch.randn((ctx.batch, channels, FEATURE_FRAMES, mels), generator=ctx.generator)
    per_channel = ctx.lookup("input_feat_per_channel", AUDIO_SIDE)
    size = (per_channel or 0) * int(ctx.lookup("input_channels", AUDIO_SIDE, 1) or 1)
    size = int(size or ctx.lookup("feature_size", AUDIO_SIDE) or ctx.lookup("input_feat_size", AUDIO_SIDE) or mels or 80)
    # A Conv1d front end over the feature axis takes channels (mel bins) first, unless
    # the model transposes itself: the variant tries the other layout.
    ctx.ambiguous = True
    channels_first = (size in ctx.conv1d_in_channels) != (ctx.variant == 1)
    # Chunked encoders take whole windows of 2·n_window frames.
    frames = _multiple(FEATURE_FRAMES, 2 * int(ctx.lookup("n_window", AUDIO_SIDE, 0) or 0))
    shape = (ctx.batch, size, frames) if channels_first else (ctx.batch, frames, size)
    ctx.frame_axis = -1 if channels_first else 1
    return torch.randn(shape, generator=ctx.generator)


def _frame_mask(ctx: InputContext) -> Any:
    """Ones over the time axis of the audio features built before it."""
    import torch

    features = ctx.inputs.get("input_features", ctx.inputs.get("audio_mel"))
    if features is None:
        return ones(ctx)
    return torch.ones((ctx.batch, features.shape[ctx.frame_axis]), dtype=torch.long)


def ones(ctx: InputContext) -> Any:
    import torch

    if "input_ids" not in ctx.inputs and "input_features" in ctx.inputs:
        return _frame_mask(ctx)  # an audio encoder's mask runs over its frames
    ref = ctx.inputs.get("input_ids")
    shape = tuple(ref.shape) if ref is not None else (ctx.batch, ctx.seq)
    return torch.ones(shape, dtype=torch.long)


def _zeros_like_ids(ctx: InputContext) -> Any:
    import torch

    return torch.zeros((ctx.batch, ctx.seq), dtype=torch.long)


def _bbox(ctx: InputContext) -> Any:
    import torch

    corners = torch.randint(0, 500, (ctx.batch, ctx.seq, 2), generator=ctx.generator)
    return torch.cat([corners, corners + 100], dim=-1)


def _audio(ctx: InputContext) -> Any:
    """Raw waveform (B, samples); a (B, frames, mels) spectrogram for encoders whose
    config fixes a mel-frame grid (``num_mel_bins`` with ``max_length``)."""
    import torch

    mels, frames = ctx.lookup("num_mel_bins", AUDIO_SIDE), ctx.lookup("max_length", AUDIO_SIDE)
    if isinstance(mels, int) and isinstance(frames, int) and ctx.lookup("patch_size", AUDIO_SIDE):
        return torch.randn((ctx.batch, frames, mels), generator=ctx.generator)
    # Codecs take (B, channels, T); speech encoders (B, T): the variant adds the axis.
    ctx.ambiguous = True
    channels = int(ctx.lookup("audio_channels", AUDIO_SIDE, 1) or 1)
    samples = _multiple(AUDIO_SAMPLES, _hop(ctx))
    shape = (ctx.batch, channels, samples) if ctx.variant == 1 else (ctx.batch, samples)
    return torch.randn(shape, generator=ctx.generator)


def _hop(ctx: InputContext) -> int:
    """Samples per frame of a strided conv front end: the product of its stage strides."""
    import math

    for key in ("patch_sizes", "downsampling_ratios"):
        strides = ctx.lookup(key, AUDIO_SIDE)
        if isinstance(strides, list) and strides and all(isinstance(v, int) and v > 0 for v in strides):
            return math.prod(strides)
    return 1


def _multiple(n: int, step: int) -> int:
    """The smallest multiple of ``step`` that is at least ``n``."""
    return -(-n // max(1, step)) * max(1, step)


def _decoder_ids(ctx: InputContext) -> Any:
    """(B, L) decoder ids; (B·codebooks, L) for a decoder over parallel audio codebooks
    (one row per codebook, as codec-token decoders lay them out)."""
    codebooks = _get(_get(ctx.config, "decoder"), "num_codebooks")
    rows = ctx.batch * codebooks if isinstance(codebooks, int) and codebooks > 1 else ctx.batch
    return token_ids(ctx, (rows, DECODER_LEN), sides=("decoder", "text_config"))


def _pixel_mask(ctx: InputContext) -> Any:
    import torch

    h, w = image_hw(ctx)
    return torch.ones((ctx.batch, h, w), dtype=torch.long)


LATENT_FRAMES = 8


def _latents(ctx: InputContext) -> Any:
    """Codec / VAE decoder latents: (B, channels, frames), channels-first as conv stacks
    read them; few frames since decoders upsample them by the hop length. The width
    is the config's; a front end that reads another gets it fitted by the probe."""
    import torch

    width = int(ctx.lookup("latent_dim", (), None) or ctx.lookup("hidden_size", (), 64))
    return torch.randn((ctx.batch, width, LATENT_FRAMES), generator=ctx.generator)


def _flattened_patches(ctx: InputContext) -> Any:
    """Variable-resolution patches: (B, N, 2 + C·p·p) rows, each led by its (row, col)
    position in the patch grid (read as embedding indices)."""
    import torch

    width = int(ctx.lookup("patch_embed_hidden_size", VISION_SIDE, None) or 3 * 16 * 16)
    side = max(1, int(ctx.seq**0.5))
    grid = torch.tensor([(r + 1, c + 1) for r in range(side) for c in range(side)], dtype=torch.float)
    patches = torch.randn((ctx.batch, side * side, width), generator=ctx.generator)
    return torch.cat([grid.expand(ctx.batch, -1, -1), patches], dim=-1)


# Argument name -> rule. Order matters: later rules may size from earlier inputs.
RULES: dict[str, Callable[[InputContext], Any]] = {
    "input_ids": lambda ctx: token_ids(ctx, (ctx.batch, ctx.seq)),
    "attention_mask": ones,
    "token_type_ids": _zeros_like_ids,
    "bbox": _bbox,
    "pixel_values": pixel_values,
    "pixel_mask": _pixel_mask,
    "input_values": _audio,
    "input_features": input_features,
    "decoder_input_ids": _decoder_ids,
    "input_features_mask": _frame_mask,
    "latents": _latents,
    "flattened_patches": _flattened_patches,
    "audio_mel": input_features,
    # A padding mask (True where padded, a BoolTensor): nothing is padded here.
    "audio_mel_mask": lambda ctx: _frame_mask(ctx).bool().logical_not(),
    # In-context segmenters: a prompt image and its mask, shaped like the image.
    "prompt_pixel_values": pixel_values,
    "prompt_masks": pixel_values,
    # A model whose main input is hidden states (a codec half): latents as well.
    "hidden_states": _latents,
    # OneFormer's task prompt ("the task is panoptic"), tokenized to the config's length.
    "task_inputs": lambda ctx: token_ids(ctx, (ctx.batch, int(ctx.lookup("task_seq_len", (), 77)))),
}
