"""pyannote-audio: speaker segmentation and embedding models.

pyannote.audio needs torchaudio, whose PyPI wheels are CUDA builds that do not load beside
the project's CPU torch (and no CPU torchaudio for torch 2.13 is in the package indexes
this project installs from): the package is not a dependency, and a pyannote row names
exactly that. The architecture each row is (from the id) is still recorded.
"""

from __future__ import annotations

import re
from typing import Any

from sweeper.libraries.base import Library
from sweeper.libraries.built import Built
from sweeper.records import ModelRef
from sweeper.settings.errors import ConfigError

# Id patterns -> the pyannote.audio model (or the models of a pipeline), first match wins.
ARCHITECTURES = (
    (r"speaker-diarization|diarization", "pipeline: PyanNet segmentation + WeSpeakerResNet34 embedding"),
    (r"wespeaker", "WeSpeakerResNet34"),
    (r"brouhaha", "PyanNet (brouhaha task)"),
    (r"segmentation|voice-activity-detection", "PyanNet"),
    (r"embedding", "XVectorSincNet"),
)


class Pyannote(Library):
    """pyannote.audio models: named and checked for their dependencies."""

    name = "pyannote"
    hub_names = frozenset({"pyannote-audio", "pyannote"})
    packages = ("pyannote.audio", "torchaudio")
    install_hint = "pyannote.audio needs a torchaudio built for the installed CPU torch"

    def architecture(self, ref: ModelRef) -> str | None:
        """The pyannote model the id names, or None."""
        name = ref.model_id.lower()
        return next((arch for pattern, arch in ARCHITECTURES if re.search(pattern, name)), None)

    def build(self, ref: ModelRef, cfg: Any) -> Built:
        """Raises MissingDependencyError naming what is missing (see the module docstring)."""
        self.require()
        raise ConfigError(f"{ref.model_id}: pyannote.audio is installed but sweeper builds no pyannote model yet "
                          f"({self.architecture(ref) or 'architecture unknown'})")
