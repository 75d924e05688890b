"""The built-in libraries, registered in the order ``library_for`` asks them."""

from __future__ import annotations

from sweeper.libraries.diffusers_lib import Diffusers
from sweeper.libraries.open_clip_lib import OpenClip
from sweeper.libraries.peft_lib import Peft
from sweeper.libraries.pyannote_lib import Pyannote
from sweeper.libraries.registry import register
from sweeper.libraries.sentence_transformers_lib import SentenceTransformers
from sweeper.libraries.timm_lib import Timm
from sweeper.libraries.transformers_lib import Transformers

for _library in (Transformers, SentenceTransformers, Timm, OpenClip, Diffusers, Pyannote, Peft):
    register(_library)
