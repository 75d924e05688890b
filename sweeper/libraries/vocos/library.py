"""vocos: Fourier-based neural vocoders (charactr/vocos-mel-24khz, vocos-encodec-24khz).

Which vocoder a repo is comes from its id (a name table): "mel" is mel-spectrogram features
> ConvNeXt backbone > ISTFT head, with the released model's sizes; "encodec" would take
EnCodec's features, which vocos builds only from EnCodec's pretrained codec (downloaded by
its constructor), so it is refused by name. The Hub lists vocos repos with no library,
pipeline or model type: a row naming none of them is vocos's when its repo name says
vocos, and the record notes the library came from the id.

Weights are tiny or random: vocos checkpoints are pickles (``pytorch_model.bin``), which
sweeper never loads. vocos imports torchaudio, whose PyPI wheel is a CUDA build; see
``audio_compat``.
"""

from __future__ import annotations

import re
from typing import Any

from sweeper.libraries.base import Library, count_parameters, weights_unless_pickled
from sweeper.libraries.built import Built
from sweeper.records import ModelRef
from sweeper.settings.errors import ConfigError

MEL = "MelSpectrogramFeatures+VocosBackbone+ISTFTHead"
ENCODEC = "EncodecFeatures+VocosBackbone+ISTFTHead"
# Id patterns -> the vocoder (feature extractor + backbone + head), first match wins.
ARCHITECTURES: tuple[tuple[str, str], ...] = ((r"encodec", ENCODEC), (r"mel", MEL))
# The repo name (not the organisation) says vocos: "vocos-mel-24khz", "my_vocos".
CLAIMED_BY_ID = re.compile(r"(^|[-_.])vocos($|[-_.])")


class Vocos(Library):
    """vocos vocoders, built small from the id."""

    name = "vocos"
    hub_names = frozenset({"vocos"})
    claimed_as = "vocos"
    packages = ("vocos", "torchaudio")

    def claims(self, ref: ModelRef) -> bool:
        """A row with no library or model type named whose repo name says vocos."""
        if ref.library_name or ref.model_type:
            return False
        return CLAIMED_BY_ID.search(_repo(ref)) is not None

    def architecture(self, ref: ModelRef) -> str | None:
        """The vocoder's parts the id names, or None."""
        name = _repo(ref)
        return next((arch for pattern, arch in ARCHITECTURES if re.search(pattern, name)), None)

    def same_build(self, ref: ModelRef) -> Any:
        """The vocoder's parts, and whether the library came from the id (a note)."""
        arch = self.architecture(ref)
        return None if arch is None else {"vocos": arch, "library_from_id": self.claims(ref)}

    def build(self, ref: ModelRef, cfg: Any) -> Built:
        """The vocoder, tiny or random, run as copy-synthesis of one waveform batch."""
        self.require()
        weights = weights_unless_pickled(ref, cfg, "vocos", "pytorch_model.bin")
        arch = self.architecture(ref)
        if arch == ENCODEC:
            raise ConfigError(f"{ref.model_id}: vocos's EncodecFeatures loads EnCodec's pretrained 24 kHz codec "
                              "(encodec_24khz-d7cc33bc.th, downloaded by its constructor), which cannot be built offline")
        if arch is None:
            raise ConfigError(f"{ref.model_id}: the id names no vocos feature extractor (mel, encodec); "
                              "its config.yaml is not read offline")
        import torch

        from sweeper.libraries.vocos import parts

        torch.manual_seed(cfg.materialise.seed)
        tiny = weights == "tiny"
        module = parts.CopySynthesis(parts.BUILDERS[arch](tiny)).to(getattr(torch, cfg.device.dtype)).eval()
        audio = parts.waveforms(cfg.materialise.seed, getattr(torch, cfg.device.dtype),
                                parts.TINY_SAMPLES if tiny else parts.FULL_SAMPLES)
        notes = {"weights": weights, "models_source": "name table",
                 "waveform": f"{audio.shape[-1]} samples at {parts.SAMPLE_RATE} Hz",
                 "loss": "L1 of the log-mel spectrograms of output and input"}
        if self.claims(ref):
            notes["library"] = "vocos (from the id; the listing names no library)"
        return Built(model=module, inputs={"audio": audio}, architecture=arch, model_type=None,
                     num_parameters=count_parameters(module), has_labels=True, notes=notes)


def _repo(ref: ModelRef) -> str:
    return ref.model_id.lower().split("/", 1)[-1]
