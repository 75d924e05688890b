"""The floating tensors of a model output, wherever they sit in it.

Libraries read them to wrap a model's output with its loss; the checks read them to
compare a device's output with the CPU's and to make a loss of it. One walk for both, so
"the first float output" means the same thing on each side.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import torch


def float_tensors(value: Any, depth: int = 0) -> Iterator[torch.Tensor]:
    """Every floating tensor in a model output (tensors, tuples, dicts, ModelOutputs)."""
    if depth > 4:
        return
    if isinstance(value, torch.Tensor):
        if value.is_floating_point():
            yield value
    elif isinstance(value, dict) or hasattr(value, "to_tuple"):
        items = value.values() if isinstance(value, dict) else value.to_tuple()
        for item in items:
            yield from float_tensors(item, depth + 1)
    elif isinstance(value, (list, tuple)):
        for item in value:
            yield from float_tensors(item, depth + 1)


def first_float(output: Any) -> torch.Tensor | None:
    """The first floating tensor of a model output (the loss when there is one)."""
    for tensor in float_tensors(output):
        return tensor
    return None
