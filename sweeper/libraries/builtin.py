"""The built-in libraries, in the order ``registry.library_for`` asks them."""

from __future__ import annotations

from sweeper.libraries.base import Library
from sweeper.libraries.diffusers_lib import Diffusers
from sweeper.libraries.open_clip_lib import OpenClip
from sweeper.libraries.peft_lib import Peft
from sweeper.libraries.pyannote_lib import Pyannote
from sweeper.libraries.sentence_transformers_lib import SentenceTransformers
from sweeper.libraries.speechbrain_lib import Speechbrain
from sweeper.libraries.timm_lib import Timm
from sweeper.libraries.transformers_lib import Transformers
from sweeper.libraries.vocos_lib import Vocos

BUILTIN: tuple[type[Library], ...] = (Transformers, SentenceTransformers, Timm, OpenClip, Diffusers, Pyannote, Speechbrain, Vocos,
                                       Peft)
