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
    from sweeper.libraries import quantization
    from sweeper.libraries.registry import library_for

    library = library_for(ref)
    if not library.quantizes:
        # A quantized repo of a library whose builder does not apply its method: named, not
        # checked as the float model it is not.
        found = quantization.detect(ref)
        if found is not None:
            raise quantization.not_applied(found, library.name, frozenset())
    return library.build(ref, cfg)
