"""The names a sweep's ``source`` setting accepts, and where each source is built.

Built-in sources are named as ``"module:attr"`` (imported when used), so this module
imports none of them; a plugin registers its own with ``@register_source("name")``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from sweeper.settings.errors import UsageError
from sweeper.settings.plugins import resolve

BUILTIN: dict[str, str] = {
    "auto": "sweeper.sources.auto:auto_source",
    "zoo": "sweeper.sources.zoo:make_zoo",
    "catalog": "sweeper.sources.catalog:catalog_source",
    "hub": "sweeper.sources.hub:hub_source",
}
# name -> a factory called with the sweep's settings (or its "module:attr").
_REGISTRY: dict[str, Callable[[Any], Any] | str] = dict(BUILTIN)


def register_source(name: str) -> Callable[[Any], Any]:
    """Decorator adding a source factory (called with the sweep's settings)."""

    def wrap(factory: Callable[[Any], Any]) -> Callable[[Any], Any]:
        _REGISTRY[name] = factory
        return factory

    return wrap


def known_sources() -> list[str]:
    """The names ``--source`` accepts."""
    return sorted(_REGISTRY)


def source_factory(name: str) -> Callable[[Any], Any]:
    """The factory registered as ``name``, imported now; UsageError for an unknown name."""
    if name not in _REGISTRY:
        raise UsageError(f"unknown source {name!r}; known: {', '.join(known_sources())}")
    return resolve(_REGISTRY[name])
