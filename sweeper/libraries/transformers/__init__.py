"""Turn a ``ModelRef`` into a model and its inputs (tiny, random or pretrained weights).

The package's own modules import ``Built`` from ``built`` (never from here), so this entry
point can reach ``build`` without an import cycle.
"""

from __future__ import annotations

from typing import Any

from sweeper.libraries.built import Built

__all__ = ["Built", "materialize"]


def materialize(ref: Any, cfg: Any) -> Built:
    """Build ``ref`` per ``cfg.materialise.weights``; raises SweeperError subclasses on known failures."""
    from sweeper.libraries.transformers.build import build

    return build(ref, cfg)
