"""Synthesise forward inputs from the model's signature and config, by rules.

The model's ``main_input_name`` and the arguments its ``forward`` requires decide what
to build; the config decides shapes and ranges (vocab, image size, channels, mel bins).
Labels follow the head kind so the output carries the model's own loss. An argument no
rule can build raises ``InputSynthesisError`` naming it.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from sweeper.errors import InputSynthesisError
from sweeper.materialize.configs import SPECIAL_ID_BASE

DECODER_LEN = 8
AUDIO_SAMPLES = 16000
FEATURE_FRAMES = 64
# Head kinds (mapping suffixes) whose loss takes ``labels`` shaped like the input ids.
TOKEN_LABEL_KINDS = frozenset({"CAUSAL_LM", "MASKED_LM", "IMAGE_TEXT_TO_TEXT", "MULTIMODAL_LM", "PRETRAINING"})
SEQ2SEQ_KINDS = frozenset({"SEQ_TO_SEQ_CAUSAL_LM", "SPEECH_SEQ_2_SEQ"})
CLASS_LABEL_KINDS = frozenset(
    {"SEQUENCE_CLASSIFICATION", "IMAGE_CLASSIFICATION", "AUDIO_CLASSIFICATION", "VIDEO_CLASSIFICATION",
     "MULTIPLE_CHOICE"}
)
# Sub-configs searched for a field, text-side first (the ids feed the text stack).
_TEXT_SIDE = ("text_config", "decoder", "language_config", "llm_config", "text_encoder")
_VISION_SIDE = ("vision_config", "encoder", "backbone_config", "vision_encoder", "image_config")
_AUDIO_SIDE = ("audio_config", "encoder", "speech_config", "audio_encoder")


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
    # waveforms with a channel axis). Build tries both when the first does not run.
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
        for holder in (self.config, *(getattr(self.config, s, None) for s in _TEXT_SIDE)):
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


def token_ids(ctx: InputContext, shape: tuple[int, ...], *, sides: tuple[str, ...] = _TEXT_SIDE) -> Any:
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
    size = ctx.lookup("image_size", _VISION_SIDE, 224)
    if isinstance(size, dict):
        size = [size.get("height", 224), size.get("width", 224)]
    if isinstance(size, (list, tuple)):
        return int(size[0]), int(size[-1])
    return int(size), int(size)


def pixel_values(ctx: InputContext) -> Any:
    """(B, C, H, W) at the config's image size; (B, T, C, H, W) when it has frames."""
    import torch

    channels = int(ctx.lookup("num_channels", _VISION_SIDE, 3))
    h, w = image_hw(ctx)
    frames = ctx.lookup("num_frames", _VISION_SIDE)
    if ctx.head_kind == "KEYPOINT_MATCHING":
        frames = 2  # matchers take image pairs
    shape = (ctx.batch, int(frames), channels, h, w) if isinstance(frames, int) else (ctx.batch, channels, h, w)
    return torch.randn(shape, generator=ctx.generator)


def input_features(ctx: InputContext) -> Any:
    """Log-mel features: (B, mels, 2·max_source_positions) for conv-front encoders with a
    fixed source length; (B, frames, features) for the others."""
    import torch

    mels = ctx.lookup("num_mel_bins", _AUDIO_SIDE)
    sources = ctx.lookup("max_source_positions", _AUDIO_SIDE)
    if isinstance(mels, int) and isinstance(sources, int):
        return torch.randn((ctx.batch, mels, 2 * sources), generator=ctx.generator)
    per_channel = ctx.lookup("input_feat_per_channel", _AUDIO_SIDE)
    size = (per_channel or 0) * int(ctx.lookup("input_channels", _AUDIO_SIDE, 1) or 1)
    size = int(size or ctx.lookup("feature_size", _AUDIO_SIDE) or mels or 80)
    # A Conv1d front end over the feature axis takes channels (mel bins) first, unless
    # the model transposes itself: the variant tries the other layout.
    ctx.ambiguous = True
    channels_first = (size in ctx.conv1d_in_channels) != bool(ctx.variant)
    shape = (ctx.batch, size, FEATURE_FRAMES) if channels_first else (ctx.batch, FEATURE_FRAMES, size)
    ctx.frame_axis = -1 if channels_first else 1
    return torch.randn(shape, generator=ctx.generator)


def _frame_mask(ctx: InputContext) -> Any:
    """Ones over the time axis of the audio features built before it."""
    import torch

    features = ctx.inputs.get("input_features")
    if features is None:
        return _ones(ctx)
    return torch.ones((ctx.batch, features.shape[ctx.frame_axis]), dtype=torch.long)


def _ones(ctx: InputContext) -> Any:
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

    mels, frames = ctx.lookup("num_mel_bins", _AUDIO_SIDE), ctx.lookup("max_length", _AUDIO_SIDE)
    if isinstance(mels, int) and isinstance(frames, int) and ctx.lookup("patch_size", _AUDIO_SIDE):
        return torch.randn((ctx.batch, frames, mels), generator=ctx.generator)
    # Codecs take (B, channels, T); speech encoders (B, T): the variant adds the axis.
    ctx.ambiguous = True
    channels = int(ctx.lookup("audio_channels", _AUDIO_SIDE, 1) or 1)
    shape = (ctx.batch, channels, AUDIO_SAMPLES) if ctx.variant else (ctx.batch, AUDIO_SAMPLES)
    return torch.randn(shape, generator=ctx.generator)


def _decoder_ids(ctx: InputContext) -> Any:
    return token_ids(ctx, (ctx.batch, DECODER_LEN), sides=("decoder", "text_config"))


def _pixel_mask(ctx: InputContext) -> Any:
    import torch

    h, w = image_hw(ctx)
    return torch.ones((ctx.batch, h, w), dtype=torch.long)


# Argument name -> rule. Order matters: later rules may size from earlier inputs.
RULES: dict[str, Callable[[InputContext], Any]] = {
    "input_ids": lambda ctx: token_ids(ctx, (ctx.batch, ctx.seq)),
    "attention_mask": _ones,
    "token_type_ids": _zeros_like_ids,
    "bbox": _bbox,
    "pixel_values": pixel_values,
    "pixel_mask": _pixel_mask,
    "input_values": _audio,
    "input_features": input_features,
    "decoder_input_ids": _decoder_ids,
    "input_features_mask": _frame_mask,
}

# Optional arguments filled with the main input when the forward takes them (the ones a
# real caller passes), and extra inputs a head kind needs to run its whole model.
COMPANIONS: dict[str, tuple[str, ...]] = {
    "input_ids": ("attention_mask", "token_type_ids", "bbox"),
    "pixel_values": ("pixel_mask",),
    "input_features": ("input_features_mask", "attention_mask"),
}
KIND_EXTRAS: dict[str, tuple[str, ...]] = {
    "IMAGE_TEXT_TO_TEXT": ("input_ids", "attention_mask"),
    "MULTIMODAL_LM": ("input_ids", "attention_mask"),
    "ZERO_SHOT_IMAGE_CLASSIFICATION": ("input_ids", "attention_mask", "pixel_values"),
    "VISUAL_QUESTION_ANSWERING": ("input_ids", "attention_mask", "pixel_values"),
}


def forward_params(model: Any) -> dict[str, inspect.Parameter]:
    """Named parameters of ``model.forward`` (no self, *args, **kwargs)."""
    sig = inspect.signature(model.forward)
    skip = (inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.VAR_KEYWORD)
    return {n: p for n, p in sig.parameters.items() if p.kind not in skip and n != "self"}


def _wanted(model: Any, ctx: InputContext, head_kind: str | None) -> list[str]:
    params = ctx.params
    main = getattr(model, "main_input_name", "input_ids")
    wanted = [main] if main in params else []
    wanted += [n for n, p in params.items() if p.default is inspect.Parameter.empty]
    wanted += [n for n in KIND_EXTRAS.get(head_kind or "", ()) if n in params]
    for name in list(wanted):
        wanted += [c for c in COMPANIONS.get(name, ()) if c in params]
    if "token_type_ids" in wanted and not ctx.lookup("type_vocab_size", _TEXT_SIDE):
        wanted.remove("token_type_ids")
    if "pixel_mask" in wanted and "pixel_mask" not in _required(params):
        wanted.remove("pixel_mask")  # all-ones is the default; only pass it when asked
    if getattr(ctx.config, "is_encoder_decoder", False) and "decoder_input_ids" in params:
        wanted.append("decoder_input_ids")
    wanted += _placeholder_free_modalities(ctx)
    return list(dict.fromkeys(n for n in wanted if n != "labels"))


# A modality input and the config fields that say its features replace placeholder
# tokens in the text (then a text-only run is the rule-built one).
_MODALITIES: dict[str, tuple[str, ...]] = {
    "pixel_values": ("image_token_id", "image_token_index", "vision_start_token_id"),
    "input_features": ("audio_token_id", "audio_token_index"),
    "input_values": ("audio_token_id", "audio_token_index"),
}


def _placeholder_free_modalities(ctx: InputContext) -> list[str]:
    """Modalities a multi-tower model fuses without placeholders (dual encoders): fill
    them with the text, since such a forward needs every tower."""
    if "input_ids" not in ctx.params:
        return []
    return [
        name for name, markers in _MODALITIES.items()
        if name in ctx.params and not any(ctx.lookup(m) is not None for m in markers)
    ]


def _required(params: dict[str, inspect.Parameter]) -> set[str]:
    return {n for n, p in params.items() if p.default is inspect.Parameter.empty}


def _build_one(name: str, ctx: InputContext) -> Any:
    rule = RULES.get(name)
    if rule is not None:
        return rule(ctx)
    if name.endswith("_ids"):
        return token_ids(ctx, (ctx.batch, ctx.seq))
    if name.endswith("_mask"):
        return _ones(ctx)
    raise InputSynthesisError(f"no rule builds the forward argument {name!r}", op=name)


def _labels(ctx: InputContext, head_kind: str | None) -> dict[str, Any]:
    """Labels that make the head compute its own loss, by head kind."""
    import torch

    params, inputs = ctx.params, ctx.inputs
    if head_kind == "ZERO_SHOT_IMAGE_CLASSIFICATION" and "return_loss" in params:
        return {"return_loss": True}
    if "labels" not in params:
        return {}
    if "decoder_input_ids" in inputs and (head_kind in SEQ2SEQ_KINDS or head_kind in TOKEN_LABEL_KINDS):
        # An encoder-decoder's loss is over the decoder sequence, whatever the head.
        return {"labels": inputs["decoder_input_ids"].clone()}
    if head_kind in TOKEN_LABEL_KINDS and "input_ids" in inputs:
        return {"labels": inputs["input_ids"].clone()}
    if head_kind == "CTC":
        vocab = int(ctx.lookup("vocab_size", (), 32))
        return {"labels": torch.randint(1, max(2, vocab), (ctx.batch, 4), generator=ctx.generator)}
    if head_kind in CLASS_LABEL_KINDS:
        num = int(getattr(ctx.config, "num_labels", 2) or 2)
        return {"labels": torch.randint(0, num, (ctx.batch,), generator=ctx.generator)}
    if head_kind == "TOKEN_CLASSIFICATION" and "input_ids" in inputs:
        num = int(getattr(ctx.config, "num_labels", 2) or 2)
        return {"labels": torch.randint(0, num, tuple(inputs["input_ids"].shape), generator=ctx.generator)}
    return {}


def make_inputs(
    model: Any, config: Any, *, head_kind: str | None, batch: int = 2, seq: int = 16, seed: int = 0,
    variant: int = 0,
) -> tuple[dict[str, Any], bool]:
    """Keyword inputs for ``model(**inputs)`` and whether they carry labels (a loss).

    ``variant`` 1 asks for the alternative layout of ambiguous signals; it raises
    ``LookupError`` when the inputs have no ambiguous signal (nothing else to try).
    """
    import torch

    from sweeper.materialize import rules

    generator = torch.Generator().manual_seed(seed)
    ctx = InputContext(
        config=config, batch=batch, seq=seq, generator=generator, params=forward_params(model),
        conv1d_in_channels=frozenset(m.in_channels for m in model.modules() if isinstance(m, torch.nn.Conv1d)),
        variant=variant, head_kind=head_kind,
    )
    # Family rules first: they claim the arguments they build (time series, ...).
    rules.adjust_inputs(ctx, model)
    for name in _wanted(model, ctx, head_kind):
        if name not in ctx.inputs:
            ctx.inputs[name] = _build_one(name, ctx)
    if variant and not ctx.ambiguous:
        raise LookupError("no alternative input layout")
    if "use_cache" in ctx.params:
        # Forward + backward is a training step: no generation cache (hybrid caches of
        # recurrent-only stacks are not even constructible).
        ctx.inputs["use_cache"] = False
    extra = _labels(ctx, head_kind)
    ctx.inputs.update(extra)
    return ctx.inputs, bool(extra)
