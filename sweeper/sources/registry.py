"""Imports the built-in sources so their ``@register_source`` decorators run."""

from __future__ import annotations

import contextlib
import importlib

for _name in ("zoo", "catalog", "hub", "auto"):
    # A source whose module is missing simply is not offered.
    with contextlib.suppress(ModuleNotFoundError):
        importlib.import_module(f"sweeper.sources.{_name}")
