"""Tied parameters across ``Module.to(device)``, for any device.

Torch moves a parameter in place only when the source and target tensor types are
"shallow-copy compatible"; out-of-tree (PrivateUse1) devices are not, so ``.to()`` makes a
new Parameter per module attribute and weights tied by sharing one Parameter come apart.
Swapping tensor contents during conversion keeps Parameter identity, and so the ties.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import torch


def tied_groups(model: torch.nn.Module) -> list[list[str]]:
    """Names of parameters that are one tensor under several names."""
    by_id: dict[int, list[str]] = {}
    for name, param in model.named_parameters(remove_duplicate=False):
        by_id.setdefault(id(param), []).append(name)
    return [names for names in by_id.values() if len(names) > 1]


def broken_groups(model: torch.nn.Module, groups: list[list[str]]) -> list[list[str]]:
    """Which of ``groups`` (from ``tied_groups`` before a move) are separate tensors now."""
    params = dict(model.named_parameters(remove_duplicate=False))
    return [names for names in groups if len({id(params[n]) for n in names if n in params}) > 1]


@contextlib.contextmanager
def swap_params_on_conversion(enabled: bool = True) -> Iterator[None]:
    """Inside the block ``Module.to()`` swaps parameter contents in place, keeping ties."""
    if not enabled:
        yield
        return
    before = torch.__future__.get_swap_module_params_on_conversion()
    torch.__future__.set_swap_module_params_on_conversion(True)
    try:
        yield
    finally:
        torch.__future__.set_swap_module_params_on_conversion(before)
