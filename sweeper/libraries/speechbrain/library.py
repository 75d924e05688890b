"""speechbrain: speaker embedding, language and sound identification models (EncoderClassifier),
and SepFormer source separation.

Which models a repo is comes from its id (a name table, ``parts.SPECS``): an
ECAPA-TDNN, ResNet or x-vector embedding model with the released repo's sizes, plus the
classifier head for a classification repo (lang-id, urbansound8k); a SepFormer repo is its
encoder, dual-path mask network and decoder (``separation``). Other speechbrain
families (speech recognition, enhancement, TTS, ...) are named and refused: each is a
pipeline of several modules (encoder, decoder, language model, vocoder) whose build is not
written here.

Weights are tiny or random: speechbrain checkpoints are pickles (``*.ckpt``), which sweeper
never loads. speechbrain imports torchaudio, whose PyPI wheel is a CUDA build; see
``audio_compat``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from sweeper.libraries.base import Library, count_parameters, weights_unless_pickled
from sweeper.libraries.built import Built
from sweeper.records import ModelRef
from sweeper.settings.errors import ConfigError

# speechbrain families not built here: id pattern -> the family as the refusal names it.
NOT_BUILT: tuple[tuple[str, str], ...] = (
    (r"asr-|m-ctc-t", "speech recognition (asr: CRDNN / transformer / conformer / wav2vec2 encoder + decoder + LM)"),
    (r"resepformer|conv-?tasnet|dprnn", "source separation (RE-SepFormer / ConvTasNet / DPRNN)"),
    (r"metricgan|mtl-mimic|enhancement|sgmse", "speech enhancement (MetricGAN+ / MIMIC)"),
    (r"tts-|vocoder|hifigan|tacotron|fastspeech", "text to speech (Tacotron2 / FastSpeech2 / HiFi-GAN)"),
    (r"vad-", "voice activity detection (CRDNN VAD)"),
    (r"emotion-recognition|wav2vec2|hubert|wavlm", "wav2vec2-based classifier (a transformers encoder inside)"),
    (r"slu-", "spoken language understanding (encoder + seq2seq decoder)"),
    (r"real-m|sisnr-estimator", "separation quality estimator (REAL-M)"),
    (r"xvector|xvect", "x-vector classifier (sizes not in the name table)"),
)


class Speechbrain(Library):
    """speechbrain's EncoderClassifier models, built small from the id."""

    name = "speechbrain"
    hub_names = frozenset({"speechbrain"})
    packages = ("speechbrain", "torchaudio")

    def architecture(self, ref: ModelRef) -> str | None:
        """The embedding model's class, "+" the classifier's for a classification repo,
        "SepFormer" for a separation repo, or None."""
        if separator_spec(ref.model_id) is not None:
            return "SepFormer"
        found = spec(ref)
        if found is None:
            return None
        return found.embedding if found.classifier is None else f"{found.embedding}+{found.classifier}"

    def same_build(self, ref: ModelRef) -> Any:
        """The family spec the id names (a separator's, or an EncoderClassifier's), or None."""
        found = separator_spec(ref.model_id) or spec(ref)
        return None if found is None else {"speechbrain": repr(found)}

    def build(self, ref: ModelRef, cfg: Any) -> Built:
        """The repo's EncoderClassifier, tiny or random, run on one waveform batch."""
        self.require()
        weights = weights_unless_pickled(ref, cfg, "speechbrain", "*.ckpt")
        if separator_spec(ref.model_id) is not None:
            return _separator(ref, cfg)
        found = spec(ref)
        if found is None:
            raise ConfigError(unbuilt(ref))
        import torch

        from sweeper.libraries.speechbrain import parts

        dtype = getattr(torch, cfg.device.dtype)
        torch.manual_seed(cfg.materialise.seed)
        model = parts.EncoderClassifier(found, weights == "tiny").to(dtype).eval()
        cast = dtype != torch.float32 and parts.cast_like_autocast(model) > 0
        audio = parts.waveforms(cfg.materialise.seed, dtype, parts.TINY_SECONDS if weights == "tiny" else parts.FULL_SECONDS)
        inputs = {"waveforms": audio, "target": parts.targets(model, cfg.materialise.seed)}
        notes = {"weights": weights, "models": _models(found), "models_source": "name table",
                 "waveform": f"{audio.shape[-1]} samples at {parts.SAMPLE_RATE} Hz",
                 "features": f"Fbank {found.n_mels} mels, sentence mean normalisation"}
        if cast:
            notes["autocast"] = "convolution inputs cast to the weights' dtype (speechbrain's float32 statistics)"
        return Built(model=model, inputs=inputs, architecture=self.architecture(ref) or "", model_type=None,
                     num_parameters=count_parameters(model), has_labels=True, notes=notes)


def spec(ref: ModelRef) -> Any:
    """The ``parts.Spec`` the id names, or None."""
    from sweeper.libraries.speechbrain.parts import SPECS

    name = ref.model_id.lower()
    return next((found for pattern, found in SPECS if re.search(pattern, name)), None)


@dataclass(frozen=True)
class SeparatorSpec:
    """A SepFormer repo: how many sources it separates, at which sample rate."""

    num_spks: int
    sample_rate: int


def separator_spec(model_id: str) -> SeparatorSpec | None:
    """The SepFormer the id names (not RE-SepFormer, another model), or None: 3 sources for a
    3-speaker mixture set, 1 for enhancement, else 2; 16 kHz when the id says 16k, else 8 kHz."""
    name = model_id.lower()
    if not re.search(r"(?<!re)sepformer", name):
        return None
    spks = 3 if re.search(r"3mix", name) else 1 if "enhancement" in name else 2
    return SeparatorSpec(spks, 16_000 if "16k" in name else 8_000)


def unbuilt(ref: ModelRef) -> str:
    """Why ``ref`` is not built: the speechbrain family its id names, or that it names none."""
    name = ref.model_id.lower()
    family = next((family for pattern, family in NOT_BUILT if re.search(pattern, name)), None)
    if family is not None:
        return f"{ref.model_id}: speechbrain {family} is not built by sweeper (only EncoderClassifier and SepFormer models)"
    return (f"{ref.model_id}: the id names no speechbrain model sweeper builds (spkrec-ecapa, spkrec-resnet, "
            "spkrec-xvect, lang-id-*-ecapa, urbansound8k_ecapa, sepformer-*); its hyperparams.yaml is not read offline")


def _separator(ref: ModelRef, cfg: Any) -> Built:
    """A SepFormer repo built tiny or random, run on one seeded mixture of its sources."""
    import torch

    from sweeper.libraries.speechbrain import separation as sep

    found = separator_spec(ref.model_id)
    assert found is not None
    tiny = cfg.materialise.weights == "tiny"
    dtype = getattr(torch, cfg.device.dtype)
    torch.manual_seed(cfg.materialise.seed)
    model = sep.Separator(found, tiny).to(dtype).eval()
    mixture, sources = sep.mixture_and_sources(found, cfg.materialise.seed, dtype, tiny)
    notes = {"weights": cfg.materialise.weights, "models": "encoder=Encoder,masknet=Dual_Path_Model,decoder=Decoder",
             "models_source": "name table", "waveform": f"{mixture.shape[-1]} samples at {found.sample_rate} Hz",
             "sources": str(found.num_spks)}
    return Built(model=model, inputs={"mixture": mixture, "target": sources}, architecture="SepFormer", model_type=None,
                 num_parameters=count_parameters(model), has_labels=True, notes=notes)


def _models(found: Any) -> str:
    """The record's ``models`` note: role=class for each module built."""
    parts = f"embedding_model={found.embedding}"
    return parts if found.classifier is None else f"{parts},classifier={found.classifier}"
