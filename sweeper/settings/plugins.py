"""Registries that name their implementations instead of importing them.

A registry maps a name to a factory or to a ``"module:attr"`` string; the string is
imported the first time the name is used, so a registry module imports none of its
implementations (no import cycle, and ``import sweeper`` stays light).
"""

from __future__ import annotations

import importlib
from typing import Any


def resolve(target: Any) -> Any:
    """The object a ``"module:attr"`` string names (anything else is returned as is)."""
    if not isinstance(target, str):
        return target
    module, _, attr = target.partition(":")
    obj: Any = importlib.import_module(module)
    for part in attr.split(".") if attr else ():
        obj = getattr(obj, part)
    return obj
