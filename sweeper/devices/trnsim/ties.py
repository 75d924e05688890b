"""Tied weights and ``Module.to("trnsim")``.

PyTorch moves a parameter in place (``param.data = moved``) only when the two tensor
types are "shallow-copy compatible"; PrivateUse1 is not in PyTorch's list, so a backend
that does nothing about it gets a new Parameter per module attribute from ``.to()``, and
weights tied by sharing one Parameter (GPT-2's ``lm_head.weight`` and ``wte.weight``) come
out as two separate tensors. Vendor backends override ``_has_compatible_shallow_copy_type``
for their device; trnsim does too (``special.shallow_copy_compatible``) while the profile's
``keeps_parameter_identity`` is on (the default). With it off, two fixes work: swap the
parameters' contents during conversion (``retie_fix``), or call the model's
``tie_weights()`` after ``.to()``.
"""

from __future__ import annotations

import contextlib

import torch

from sweeper.devices.tied_weights import swap_params_on_conversion


def tied_pairs(module: torch.nn.Module) -> list[tuple[str, str]]:
    """Pairs of parameter names that share one Parameter object in ``module``."""
    seen: dict[int, str] = {}
    pairs: list[tuple[str, str]] = []
    for name, param in module.named_parameters(remove_duplicate=False):
        first = seen.setdefault(id(param), name)
        if first != name:
            pairs.append((first, name))
    return pairs


def untied_pairs(module: torch.nn.Module, before: list[tuple[str, str]]) -> list[tuple[str, str]]:
    """Which of the ``before`` pairs (from ``tied_pairs`` ahead of ``.to()``) are now apart."""
    params = dict(module.named_parameters(remove_duplicate=False))
    return [(a, b) for a, b in before if a in params and b in params and params[a] is not params[b]]


def retie_fix() -> contextlib.AbstractContextManager[None]:
    """Inside the block ``Module.to()`` swaps parameter contents in place, keeping ties."""
    return swap_params_on_conversion(True)
