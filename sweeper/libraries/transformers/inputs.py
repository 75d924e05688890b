"""Synthesise forward inputs from the model's signature and config, by rules.

The model's ``main_input_name`` and the arguments its ``forward`` requires decide what
to build; the config decides shapes and ranges (vocab, image size, channels, mel bins).
Labels follow the head kind so the output carries the model's own loss. An argument no
rule can build raises ``InputSynthesisError`` naming it.
"""

from __future__ import annotations

import inspect
from typing import Any

from sweeper.libraries.transformers.input_rules import main_inputs
from sweeper.libraries.transformers.signals import RULES, TEXT_SIDE, InputContext, ones, token_ids
from sweeper.settings.errors import InputSynthesisError

# Head kinds (mapping suffixes) whose loss takes ``labels`` shaped like the input ids.
TOKEN_LABEL_KINDS = frozenset({"CAUSAL_LM", "MASKED_LM", "IMAGE_TEXT_TO_TEXT", "MULTIMODAL_LM", "PRETRAINING"})
SEQ2SEQ_KINDS = frozenset({"SEQ_TO_SEQ_CAUSAL_LM", "SPEECH_SEQ_2_SEQ"})
CLASS_LABEL_KINDS = frozenset(
    {"SEQUENCE_CLASSIFICATION", "IMAGE_CLASSIFICATION", "AUDIO_CLASSIFICATION", "VIDEO_CLASSIFICATION",
     "MULTIPLE_CHOICE"}
)

# Heads of an encoder-decoder that read the decoder's state at the input positions
# (classification at the eos token, spans): the decoder runs on the shifted input ids,
# as their forward derives them, so no decoder ids of another length are passed.
ENCODER_READING_KINDS = frozenset({"SEQUENCE_CLASSIFICATION", "QUESTION_ANSWERING", "TOKEN_CLASSIFICATION"})

IGNORE_INDEX = -100

# Heads that generate their answer with a text decoder when the forward takes decoder
# ids (a VQA model that decodes answers, unlike one classifying over fixed answers):
# the answer ids are the decoder's input and its labels.
DECODED_ANSWER_KINDS = frozenset({"VISUAL_QUESTION_ANSWERING"})

# Optional arguments filled with the main input when the forward takes them (the ones a
# real caller passes), and extra inputs a head kind needs to run its whole model.
COMPANIONS: dict[str, tuple[str, ...]] = {
    "input_ids": ("attention_mask", "token_type_ids", "bbox"),
    # Promptable / text-conditioned vision models read a text prompt too.
    "pixel_values": ("pixel_mask", "input_ids"),
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
    main, *more_main = main_inputs(model)
    if main not in params:
        # A main_input_name the forward does not take (inherited default): the first
        # signal the forward does take stands in.
        main = next((n for n in ("input_ids", "pixel_values", "input_values", "input_features") if n in params), main)
    wanted = [main] if main in params else []
    wanted += [n for n in more_main if n in params]
    wanted += [n for n, p in params.items() if p.default is inspect.Parameter.empty]
    wanted += [n for n in KIND_EXTRAS.get(head_kind or "", ()) if n in params]
    for name in list(wanted):
        companions = [c for c in COMPANIONS.get(name, ()) if c in params]
        if ctx.variant == 2 and name != "input_ids" and companions:
            # The minimal variant: signals without their optional masks (some encoders
            # take a different mask type under the same name).
            ctx.ambiguous = True
            continue
        wanted += companions
    if "token_type_ids" in wanted and not ctx.lookup("type_vocab_size", TEXT_SIDE):
        wanted.remove("token_type_ids")
    if "pixel_mask" in wanted and "pixel_mask" not in _required(params):
        wanted.remove("pixel_mask")  # all-ones is the default; only pass it when asked
    if "decoder_input_ids" in params and (
        (getattr(ctx.config, "is_encoder_decoder", False) and head_kind not in ENCODER_READING_KINDS)
        or head_kind in DECODED_ANSWER_KINDS
    ):
        wanted.append("decoder_input_ids")
    wanted += _placeholder_free_modalities(ctx)
    return list(dict.fromkeys(n for n in wanted if n != "labels"))


# A modality input and the config fields that say its features replace placeholder
# tokens in the text (then the rules build a text-only run; ``images`` adds images and
# their placeholders to it).
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
        return ones(ctx)
    raise InputSynthesisError(f"no rule builds the forward argument {name!r}", op=name)


def _labels(ctx: InputContext, head_kind: str | None) -> dict[str, Any]:
    """Labels that make the head compute its own loss, by head kind."""
    import torch

    params, inputs = ctx.params, ctx.inputs
    if head_kind == "ZERO_SHOT_IMAGE_CLASSIFICATION" and "return_loss" in params:
        return {"return_loss": True}
    if "labels" not in params:
        return {}
    if "decoder_input_ids" in inputs and (
        head_kind in SEQ2SEQ_KINDS or head_kind in TOKEN_LABEL_KINDS or head_kind in DECODED_ANSWER_KINDS
    ):
        # An encoder-decoder's loss is over the decoder sequence, whatever the head.
        return {"labels": inputs["decoder_input_ids"].clone()}
    if head_kind in TOKEN_LABEL_KINDS and "input_ids" in inputs:
        labels = inputs["input_ids"].clone()
        image = ctx.lookup("image_token_index") if ctx.lookup("image_token_id") is None else ctx.lookup("image_token_id")
        if isinstance(image, int) and not isinstance(image, bool):
            labels[labels == image] = IGNORE_INDEX  # no loss on image positions, as processors do
        marked = inputs.get("image_embeds_position_mask")
        if marked is not None and marked.shape == labels.shape:
            labels[marked.bool()] = IGNORE_INDEX
        return {"labels": labels}
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

    ``variant`` 1 asks for the alternative layout of ambiguous signals, 2 for signals
    without their optional masks; either raises ``LookupError`` when it would change
    nothing (no other candidate to try).
    """
    import torch

    from sweeper.libraries.transformers import input_rules

    generator = torch.Generator().manual_seed(seed)
    ctx = InputContext(
        config=config, batch=batch, seq=seq, generator=generator, params=forward_params(model),
        conv1d_in_channels=frozenset(m.in_channels for m in model.modules() if isinstance(m, torch.nn.Conv1d)),
        variant=variant, head_kind=head_kind,
    )
    # Family rules first: they claim the arguments they build (time series, ...).
    input_rules.adjust_inputs(ctx, model)
    for name in _wanted(model, ctx, head_kind):
        if name not in ctx.inputs:
            ctx.inputs[name] = _build_one(name, ctx)
    if variant and not ctx.ambiguous:
        raise LookupError(f"input variant {variant} changes nothing here")
    if "use_cache" in ctx.params:
        # Forward + backward is a training step: no generation cache (hybrid caches of
        # recurrent-only stacks are not even constructible).
        ctx.inputs["use_cache"] = False
    extra = _labels(ctx, head_kind)
    ctx.inputs.update(extra)
    # Labels a family rule built (spectrogram targets) make a loss as well.
    return cast_floating(ctx.inputs, model_dtype(model)), bool(extra) or "labels" in ctx.inputs


def model_dtype(model: Any) -> Any:
    """The dtype of the model's floating parameters (float32 when it has none)."""
    import torch

    return next((p.dtype for p in model.parameters() if p.is_floating_point()), torch.float32)


def cast_floating(value: Any, dtype: Any) -> Any:
    """Floating tensors cast to ``dtype``, as a user of a bfloat16 model casts the
    features and pixels fed to it; ids, integer masks and plain values unchanged."""
    import torch

    if isinstance(value, torch.Tensor):
        return value.to(dtype) if value.is_floating_point() and value.dtype != dtype else value
    if isinstance(value, dict):
        return {k: cast_floating(v, dtype) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(cast_floating(v, dtype) for v in value)
    return value
