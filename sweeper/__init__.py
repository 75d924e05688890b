"""sweeper: how much of the Hugging Face Hub runs on a PyTorch device, and what blocks the rest."""

from sweeper.libraries import audio_compat as _audio_compat
from sweeper.libraries import vision_compat as _vision_compat

__version__ = "0.1.0"

# Before anything imports torchvision (transformers, timm, open_clip do): its CUDA wheel's
# extension does not load beside the CPU torch, see sweeper/libraries/vision_compat.py.
_vision_compat.install()
# The same for torchaudio (pyannote.audio imports it), see sweeper/libraries/audio_compat.py.
_audio_compat.install()
