"""Dynamo's settings without what an earlier model's library import changed.

A library may change Dynamo's settings for its whole process when it is imported
(gptqmodel raises the recompile limit from 8 to 128). A user who compiles a BERT never
imports it, but a worker that checked a GPTQ repo before would judge the BERT's recompiles
and graph breaks under the raised limit: the verdict would depend on which models the
worker met first. So such an import runs under ``changes_by``, which keeps what the
settings were before it; each check starts with ``restore`` (those settings back), and the
library's loader re-applies its import's settings for its own models (``apply``).

The device's own settings (trnsim turns automatic dynamic shapes off for a static-shape
profile) are not a library import's and are left alone.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

# The settings a library import changed, as they were before it (the first such import's).
_BEFORE_IMPORTS: dict[str, Any] = {}


def _config() -> Any:
    from torch._dynamo import config

    return config


def _differs(a: Any, b: Any) -> bool:
    if a is b:
        return False
    try:
        return bool(a != b)
    except Exception:  # noqa: BLE001 - values without a comparison count as changed
        return True


def changes_by(action: Callable[[], None]) -> dict[str, Any]:
    """Run ``action`` (a library's import) and return the Dynamo settings it changed, by
    name; ``restore`` sets them back to what they were before it."""
    config = _config()
    before = config.get_config_copy()
    action()
    after = config.get_config_copy()
    changed = {name: value for name, value in after.items() if _differs(before.get(name), value)}
    for name in changed:
        _BEFORE_IMPORTS.setdefault(name, before.get(name))
    return changed


def restore() -> None:
    """The settings library imports changed (``changes_by``) back to what they were."""
    apply(_BEFORE_IMPORTS)


def apply(settings: dict[str, Any]) -> None:
    """Set these Dynamo settings (names as ``torch._dynamo.config`` spells them)."""
    if not settings:
        return  # no Dynamo import for a check that never met a library import's settings
    config = _config()
    for name, value in settings.items():
        setattr(config, name, value)
