"""The names ``--executor`` accepts, and where each executor is built.

Built-in executors are named as ``"module:attr"`` (imported when used), so this module
imports none of them; a plugin offers its own with ``register_executor``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from sweeper.settings.errors import UsageError
from sweeper.settings.plugins import resolve

BUILTIN: dict[str, str] = {
    "inline": "sweeper.executors.inline:InlineExecutor",
    "process": "sweeper.executors.process:ProcessExecutor",
    "ray": "sweeper.executors.ray:RayExecutor",
}
# name -> a factory called with the sweep's settings (or its "module:attr").
_REGISTRY: dict[str, Callable[[Any], Any] | str] = dict(BUILTIN)


def register_executor(name: str, factory: Callable[[Any], Any] | str) -> None:
    """Offer an executor as ``--executor NAME``: a factory ``(cfg) -> Executor`` or its ``"module:attr"``."""
    _REGISTRY[name] = factory


def known_executors() -> list[str]:
    """The names ``--executor`` accepts."""
    return sorted(_REGISTRY)


def executor_factory(name: str) -> Callable[[Any], Any]:
    """The factory registered as ``name``, imported now; UsageError for an unknown name."""
    if name not in _REGISTRY:
        raise UsageError(f"unknown executor {name!r}; choose one of {', '.join(known_executors())}")
    return resolve(_REGISTRY[name])
