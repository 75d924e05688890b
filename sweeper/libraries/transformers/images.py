"""Images for vision-language models: pixel inputs plus the placeholder tokens they fill.

A vision-language model whose config names an image token (``image_token_id`` /
``image_token_index``) scatters its vision features into the text at those tokens, and
refuses a forward whose count of placeholders differs from its count of features. That
count depends on the image size, patch size, pooling and merging of each family; rather
than model it per family, the model is asked: a forward with pixel inputs and no
placeholders fails with "tokens: 0, features: N", and N placeholders then fill the text.

The text-only inputs stay the fallback: when no image layout runs, the record's notes
say why, and the sweep still tries the language model.
"""

from __future__ import annotations

import re
from typing import Any

from sweeper.libraries.transformers.input_rules import patch_geometry
from sweeper.libraries.transformers.inputs import IGNORE_INDEX, forward_params, make_inputs
from sweeper.libraries.transformers.signals import InputContext, pixel_values

IMAGE_TOKEN_KEYS = ("image_token_id", "image_token_index")
# "tokens: 0, features: 256" and its variants ("features 256", "tokens: 0, features:\n256").
_COUNTS = re.compile(r"tokens:?\s*(\d+)\s*,?\s*features:?\s*(\d+)", re.IGNORECASE)
# Placeholders beyond this per sample would make a "tiny" run long; the text-only run stays.
MAX_PLACEHOLDERS = 1024


def image_token(config: Any) -> int | None:
    """The placeholder id the config names for images (top config first), or None."""
    holders = [config, *(getattr(config, n, None) for n in ("text_config", "language_config"))]
    for holder in holders:
        for key in IMAGE_TOKEN_KEYS:
            try:
                value = getattr(holder, key, None) if holder is not None else None
            except Exception:  # noqa: BLE001 - per-layer attributes refuse global reads
                value = None
            if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
                return value
    return None


def wants_images(model: Any, inputs: dict[str, Any]) -> bool:
    """A model fusing images into text at placeholder tokens, given text-only inputs."""
    params = forward_params(model)
    return (
        "pixel_values" in params and "input_ids" in inputs and "pixel_values" not in inputs
        and image_token(model.config) is not None
    )


def with_images(
    model: Any, inputs: dict[str, Any], *, head_kind: str | None, batch: int, seq: int, seed: int,
) -> tuple[dict[str, Any], str]:
    """Inputs with one image per sample and its placeholders, and a note saying how.

    Returns the text-only ``inputs`` unchanged (with the reason in the note) when no
    image layout runs.
    """
    token = image_token(model.config)
    assert token is not None
    first_error = ""
    for images in _image_layouts(model, batch, seed):
        try:
            _forward(model, {**inputs, **images})
        except Exception as exc:  # noqa: BLE001 - the expected refusal carries the count
            counts = _COUNTS.search(str(exc))
            if counts is not None and int(counts.group(1)) == 0:
                return _fill(model, inputs, images, token, int(counts.group(2)),
                             head_kind=head_kind, batch=batch, seq=seq, seed=seed)
            first_error = first_error or _brief(exc)
        else:
            return {**inputs, **images}, "images fused without placeholder tokens"
    return inputs, f"text-only: no image layout runs ({first_error})"


def _fill(
    model: Any, inputs: dict[str, Any], images: dict[str, Any], token: int, features: int, *,
    head_kind: str | None, batch: int, seq: int, seed: int,
) -> tuple[dict[str, Any], str]:
    """Text with placeholders for ``features`` spread over the batch, and the images.

    Some families report the features' element count rather than their number: divided
    by the text embedding width, it gives the number of tokens.
    """
    counts = [features]
    width = _embedding_width(model)
    if width and features % width == 0:
        counts.append(features // width)
    fits = [n // batch for n in counts if n % batch == 0 and 0 < n // batch <= MAX_PLACEHOLDERS]
    if not fits:
        return inputs, f"text-only: {features} image features for {batch} samples"
    error = ""
    for per_sample in fits:
        fused = _placeholder_inputs(model, token, per_sample, head_kind=head_kind, batch=batch, seq=seq, seed=seed)
        fused.update(images)
        try:
            _forward(model, fused)
        except Exception as exc:  # noqa: BLE001 - keep the text-only run
            error = error or f"{per_sample} image placeholders per sample fail ({_brief(exc)})"
            continue
        return fused, f"one image per sample, {per_sample} placeholder tokens each"
    return inputs, f"text-only: {error}"


def _embedding_width(model: Any) -> int | None:
    try:
        return int(model.get_input_embeddings().weight.shape[-1])
    except Exception:  # noqa: BLE001 - no plain embedding table
        return None


def _image_layouts(model: Any, batch: int, seed: int) -> list[dict[str, Any]]:
    """Pixel inputs for one image per sample, in the layouts families use, most common
    first: (B, C, H, W); with each image's size when the forward takes it, and as
    any-resolution crops; (B, 1, C, H, W) for towers with an images-per-sample axis;
    patch rows and their grid for native-resolution towers."""
    import torch

    params = forward_params(model)
    ctx = InputContext(
        config=model.config, batch=batch, seq=1, generator=torch.Generator().manual_seed(seed + 1), params=params,
    )
    if "image_grid_thw" in params:
        # Flattened (t·h·w, C·tp·p·p) rows, as the grid-taking towers read them.
        patch, temporal, channels, side = patch_geometry(ctx)
        rows = torch.randn((batch * side * side, channels * temporal * patch * patch), generator=ctx.generator)
        return [{"pixel_values": rows, "image_grid_thw": torch.tensor([[1, side, side]] * batch)}]
    pixels = pixel_values(ctx)
    layouts = [{"pixel_values": pixels}]
    if "image_sizes" in params:
        h, w = pixels.shape[-2:]
        sizes = torch.tensor([[h, w]] * batch)
        layouts.append({"pixel_values": pixels, "image_sizes": sizes})
        crops = _crop_count(model.config, h, w)
        if crops is not None and pixels.dim() == 4:
            # Any-resolution towers: the image's crops (the grid pinpoint it fits, cut
            # into tower-sized tiles, plus the whole image) stacked per sample.
            tiles = torch.randn((batch, crops, *pixels.shape[1:]), generator=ctx.generator)
            layouts.append({"pixel_values": tiles, "image_sizes": sizes})
    if pixels.dim() == 4:
        layouts.append({"pixel_values": pixels.unsqueeze(1)})
    return layouts


def _crop_count(config: Any, height: int, width: int) -> int | None:
    """How many tower-sized crops an any-resolution processor cuts from a tower-sized
    image, for configs with ``image_grid_pinpoints``; None for the others."""
    pinpoints = getattr(config, "image_grid_pinpoints", None)
    if not isinstance(pinpoints, list) or not pinpoints:
        return None
    try:
        from transformers.models.llava_next.modeling_llava_next import image_size_to_num_patches

        return int(image_size_to_num_patches((height, width), pinpoints, height))
    except Exception:  # noqa: BLE001 - no crop count: the other layouts still run
        return None


def _placeholder_inputs(
    model: Any, token: int, per_sample: int, *, head_kind: str | None, batch: int, seq: int, seed: int,
) -> dict[str, Any]:
    """Text inputs ``per_sample`` longer, the placeholders after the first token."""
    inputs, _ = make_inputs(model, model.config, head_kind=head_kind, batch=batch, seq=seq + per_sample, seed=seed)
    ids = inputs["input_ids"]
    span = slice(1, 1 + per_sample)
    ids[:, span] = token
    labels = inputs.get("labels")
    if labels is not None and labels.shape == ids.shape:
        labels[:, span] = IGNORE_INDEX  # no loss on image positions, as processors do
    if "mm_token_type_ids" in forward_params(model):
        # Each position's modality (text 0, image 1), which multimodal RoPE reads.
        inputs["mm_token_type_ids"] = (ids == token).int()
    return inputs


def _forward(model: Any, inputs: dict[str, Any]) -> None:
    import torch

    from sweeper.libraries.pristine import pristine

    with torch.no_grad(), pristine(model):
        model(**inputs)


def _brief(exc: BaseException) -> str:
    text = " ".join(str(exc).split())
    return f"{type(exc).__name__}: {text[:160]}"
