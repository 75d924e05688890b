"""The built-in libraries, in the order ``registry.library_for`` asks them."""

from __future__ import annotations

from sweeper.libraries.base import Library
from sweeper.libraries.diffusers.library import Diffusers
from sweeper.libraries.open_clip.library import OpenClip
from sweeper.libraries.peft.library import Peft
from sweeper.libraries.pyannote.library import Pyannote
from sweeper.libraries.sentence_transformers.library import SentenceTransformers
from sweeper.libraries.speechbrain.library import Speechbrain
from sweeper.libraries.timm.library import Timm
from sweeper.libraries.transformers.library import Transformers
from sweeper.libraries.vocos.library import Vocos

BUILTIN: tuple[type[Library], ...] = (Transformers, SentenceTransformers, Timm, OpenClip, Diffusers, Pyannote, Speechbrain, Vocos,
                                       Peft)
