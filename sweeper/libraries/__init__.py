"""Model libraries behind one interface (``base.Library``): transformers,
sentence-transformers, timm, open_clip, diffusers, pyannote, speechbrain, vocos, peft; plugins through the
``sweeper.libraries`` entry-point group. ``build(ref, cfg)`` is what the load stage calls.
"""

from __future__ import annotations

from typing import Any

from sweeper.libraries.built import Built
from sweeper.records import ModelRef


def build(ref: ModelRef, cfg: Any) -> Built:
    """``ref`` built by its library (raises NotPytorchError, UnsupportedLibraryError,
    MissingDependencyError, or the library's own SweeperError subclasses)."""
    from sweeper.libraries.registry import library_for

    return library_for(ref).build(ref, cfg)
