"""The inputs of the shapes stage: the compile stage's inputs at other shapes, and padded.

A static-shape device compiles once per distinct input shape, so what varying lengths
cost is measured by feeding the model the same inputs at a longer sequence (more audio
samples) and at another batch size. Lengths grow by repeating the inputs' own first
positions, so every value stays one the model already accepts (token ids, masks, type
ids, boxes); rows are added the same way. Image inputs keep their size: another size is
another model for most vision encoders.

Padding to buckets: the inputs cut to fewer real positions, and the same real positions
right-padded back to the bucket (the compile stage's length) with the attention mask off
over the padding, as users of static-shape devices feed them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import torch

# Inputs whose dimension 1 is the length, in the order the length is read from.
LENGTH_KEYS = ("input_ids", "input_values", "decoder_input_ids", "inputs_embeds", "input_features")
# Inputs left as they are: another image size is another model for most encoders.
FIXED_SIZE = ("pixel", "image")
# Inputs padding leaves out: a loss over padded labels is another loss.
LABEL_KEYS = ("labels", "label", "decoder_labels")
# Config fields that cap the length a model accepts.
LENGTH_CAPS = ("max_position_embeddings", "n_positions", "max_seq_len", "max_sequence_length", "n_ctx",
               "max_source_positions", "max_text_len")
# The label of the run that grows the first new shape's dimension once more.
AGAIN = "again"
# What padding fills each input with (the rest take 0); input ids take the pad token.
PAD_VALUES = {"attention_mask": 0, "decoder_attention_mask": 0, "token_type_ids": 0}


@dataclass
class ShapeRun:
    """One input shape the stage runs: a label, the inputs (on the CPU) and their sizes."""

    label: str
    inputs: dict[str, Any]
    sizes: dict[str, list[int]] = field(default_factory=dict)

    def describe(self) -> str:
        """``input_ids 2x24`` (the first sized input), for messages."""
        for key, size in self.sizes.items():
            return f"{key} {'x'.join(map(str, size))}"
        return self.label


@dataclass
class PaddingPair:
    """The same real positions unpadded and right-padded to the bucket, mask off on the padding."""

    real: int
    bucket: int
    unpadded: dict[str, Any]
    padded: dict[str, Any]


def moved(value: Any, device: str) -> Any:
    """Inputs (tensors, nested in lists, tuples and dicts) moved to ``device``."""
    if isinstance(value, torch.Tensor):
        return value.to(device)
    if isinstance(value, (list, tuple)):
        return type(value)(moved(v, device) for v in value)
    if isinstance(value, dict):
        return {k: moved(v, device) for k, v in value.items()}
    return value


def inference_inputs(inputs: dict[str, Any]) -> dict[str, Any]:
    """The inputs without labels: padding compares the outputs of inference."""
    return {k: v for k, v in inputs.items() if k not in LABEL_KEYS}


def length_of(inputs: dict[str, Any]) -> tuple[int, int] | None:
    """(batch, length) of the first length input, or None when the inputs have none."""
    for key in LENGTH_KEYS:
        value = inputs.get(key)
        if isinstance(value, torch.Tensor) and value.ndim >= 2:
            return int(value.shape[0]), int(value.shape[1])
    return None


def batch_of(inputs: dict[str, Any]) -> int | None:
    """The batch size: dimension 0 of the first tensor input."""
    for value in inputs.values():
        if isinstance(value, torch.Tensor) and value.ndim >= 1:
            return int(value.shape[0])
    return None


def length_cap(config: Any) -> int | None:
    """The longest sequence the config admits (the smallest cap it names), or None."""
    caps = [getattr(config, name, None) for name in LENGTH_CAPS]
    caps += [getattr(getattr(config, "text_config", None), name, None) for name in LENGTH_CAPS]
    found = [int(c) for c in caps if isinstance(c, int) and not isinstance(c, bool) and c > 0]
    return min(found) if found else None


def _sequence_inputs(inputs: dict[str, Any], batch: int, length: int) -> list[str]:
    """The inputs that run along the length: (batch, length, ...) and not an image."""
    return [k for k, v in inputs.items() if isinstance(v, torch.Tensor) and v.ndim >= 2 and
            tuple(v.shape[:2]) == (batch, length) and not any(f in k for f in FIXED_SIZE)]


def _grow(tensor: torch.Tensor, dim: int, extra: int) -> torch.Tensor:
    """``tensor`` with ``extra`` more entries along ``dim``, repeating its first ones."""
    reps = -(-extra // tensor.shape[dim])
    head = torch.cat([tensor] * reps, dim=dim).narrow(dim, 0, extra)
    return torch.cat([tensor, head], dim=dim)


def sizes(inputs: dict[str, Any]) -> dict[str, list[int]]:
    """Each tensor input's size."""
    return {k: list(v.shape) for k, v in inputs.items() if isinstance(v, torch.Tensor)}


def shape_runs(inputs: dict[str, Any], config: Any = None, *, again: bool = False) -> list[ShapeRun]:
    """The shapes the stage runs: the compile stage's (its very inputs, labels included,
    so the compile stage's graphs serve it), a longer sequence (when the inputs have one and
    the config admits it) and one more row in the batch. With ``again``, the first of those
    grown once more (``AGAIN``, right after it): under Dynamo's automatic dynamic shapes
    the second size recompiles with that dimension symbolic and a third must reuse it."""
    base = dict(inputs)
    runs = [ShapeRun("compile", base, sizes(base))]
    dims = length_of(base)
    if dims is not None:
        batch, length = dims
        step = max(1, length // 2)
        cap = length_cap(config)
        keys = _sequence_inputs(base, batch, length)
        reached = length
        for label, extra in (("longer", step), (AGAIN, 2 * step))[: 2 if again else 1]:
            longer = length + extra if cap is None else min(length + extra, cap)
            if not keys or longer <= reached:
                break
            grown = {k: (_grow(v, 1, longer - length) if k in keys else v) for k, v in base.items()}
            runs.append(ShapeRun(label, grown, sizes(grown)))
            reached = longer
    batch = batch_of(base)
    if batch:
        again_here = again and not any(r.label == AGAIN for r in runs)
        for label, extra in (("batch", 1), (AGAIN, 2))[: 2 if again_here else 1]:
            more = {k: (_grow(v, 0, extra) if isinstance(v, torch.Tensor) and v.ndim >= 1 and v.shape[0] == batch else v)
                    for k, v in base.items()}
            runs.append(ShapeRun(label, more, sizes(more)))
    return runs


def padding_pair(inputs: dict[str, Any], *, pad_token_id: int | None) -> PaddingPair | None:
    """The inputs cut to three quarters of their length, and right-padded back to it with
    the attention mask off on the padding; None for inputs without an attention mask over
    their length."""
    base = inference_inputs(inputs)
    dims = length_of(base)
    mask = base.get("attention_mask")
    if dims is None or not isinstance(mask, torch.Tensor) or tuple(mask.shape[:2]) != dims or dims[1] < 2:
        return None
    batch, bucket = dims
    real = bucket - max(1, bucket // 4)
    keys = _sequence_inputs(base, batch, bucket)
    unpadded = {k: (v[:, :real] if k in keys else v) for k, v in base.items()}
    padded = {}
    for key, value in base.items():
        if key not in keys:
            padded[key] = value
            continue
        fill = pad_token_id if key.endswith("input_ids") and pad_token_id is not None else PAD_VALUES.get(key, 0)
        out = value.clone()
        out[:, real:] = fill
        padded[key] = out
    return PaddingPair(real, bucket, unpadded, padded)
