"""Keep a model as built across the CPU forwards the harness runs before the device's.

Some modules cache a tensor derived from their weights in a plain attribute on their
first forward (a codebook's normalised embedding, rotary tables). ``module.to(device)``
moves parameters and buffers, never plain attributes, so a cache filled by a CPU probe
stays on the CPU and the device forward mixes devices: a failure no user meets (they move
the model before running it) that the harness would cause. The probe and reference
forwards run inside ``pristine``, which puts every plain tensor attribute back.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

_MISSING = object()


def _tensor_attributes(model: Any) -> dict[tuple[int, str], tuple[Any, Any]]:
    """(module id, name) -> (module, value) for plain attributes holding a tensor or None."""
    import torch

    found: dict[tuple[int, str], tuple[Any, Any]] = {}
    for module in model.modules():
        for name, value in vars(module).items():
            if value is None or isinstance(value, torch.Tensor):
                found[(id(module), name)] = (module, value)
    return found


@contextlib.contextmanager
def pristine(model: Any) -> Iterator[None]:
    """Run the body, then restore the plain tensor attributes the forward cached."""
    before = _tensor_attributes(model)
    try:
        yield
    finally:
        after = _tensor_attributes(model)
        for key, (module, value) in after.items():
            old = before.get(key, (module, _MISSING))[1]
            if old is _MISSING:
                delattr(module, key[1])  # a cache the forward added
            elif old is not value:
                object.__setattr__(module, key[1], old)
