"""The vocos vocoders a Hub repo is, built small, run as copy-synthesis with a mel loss.

``Vocos.forward(audio)`` is features -> backbone -> head -> waveform; it runs under
``torch.inference_mode`` (no gradient), so ``CopySynthesis`` calls the same three parts of
a real ``vocos.pretrained.Vocos`` itself. The loss is vocos's own reconstruction term,
``MelSpecReconstructionLoss`` (L1 between the log-mel spectrograms of the output and the
input waveform): the vocoder is trained to match the mel, not the phase, so a waveform L1
would grade a phase the model is free to choose.

The spectral parts (mel features, the head's inverse STFT, the loss's mel) run in float32
when the model is bfloat16 or float16: torch's CPU FFT has no reduced-precision kernels
(as autocast does, results are cast back).
"""

from __future__ import annotations

from typing import Any

import torch

SAMPLE_RATE = 24_000
BATCH = 2
# The sizes of the released mel vocoder (charactr/vocos-mel-24khz), from the package's
# training config gemelo-ai/vocos configs/vocos.yaml (the Hub's config.yaml is not read
# offline): mel features of a 1024-point STFT, hop 256, 100 bands, "center" padding;
# ConvNeXt backbone 512 wide, 1536 inner, 8 layers; ISTFT head n_fft 1024, hop 256.
# MelSpectrogramFeatures' defaults are the same STFT. ISTFTHead's default padding is
# "same"; the mel config sets "center" because its features are center-padded (the
# maintainers' answer in gemelo-ai/vocos issue 18; "same" is the encodec config's), and
# so the output has the input's length.
MEL = {"n_fft": 1024, "hop_length": 256, "n_mels": 100, "padding": "center"}
FULL_BACKBONE = {"dim": 512, "intermediate_dim": 1536, "num_layers": 8}
# Tiny keeps the STFT/ISTFT shapes real and shrinks the backbone only.
TINY_BACKBONE = {"dim": 32, "intermediate_dim": 64, "num_layers": 2}
# Waveform lengths: a multiple of the hop, so the output has the input's length. Random
# uses the training segment (16384 samples, 0.68 s); tiny a quarter of it.
FULL_SAMPLES = 16_384
TINY_SAMPLES = 4_096
_REDUCED = (torch.bfloat16, torch.float16)


class Float32(torch.nn.Module):
    """``inner`` run in float32 when its input is bfloat16/float16, the result cast back;
    its buffers (STFT window, mel filters) stay float32 whatever the model is cast to."""

    def __init__(self, inner: torch.nn.Module) -> None:
        super().__init__()
        self.inner = inner

    def _apply(self, fn: Any, recurse: bool = True) -> Any:
        super()._apply(fn, recurse)
        for module in self.modules():
            for name, buf in module._buffers.items():
                if buf is not None and buf.dtype in _REDUCED:
                    module._buffers[name] = buf.float()
        return self

    def forward(self, x: torch.Tensor, *rest: torch.Tensor) -> torch.Tensor:
        dtype = x.dtype
        if dtype not in _REDUCED:
            return self.inner(x, *rest)
        out = self.inner(x.float(), *(t.float() for t in rest))
        return out.to(dtype) if out.dim() else out


def mel_vocos(tiny: bool) -> Any:
    """vocos.pretrained.Vocos: MelSpectrogramFeatures + VocosBackbone + ISTFTHead."""
    from vocos.feature_extractors import MelSpectrogramFeatures
    from vocos.heads import ISTFTHead
    from vocos.models import VocosBackbone
    from vocos.pretrained import Vocos

    sizes = TINY_BACKBONE if tiny else FULL_BACKBONE
    features = MelSpectrogramFeatures(sample_rate=SAMPLE_RATE, **MEL)
    backbone = VocosBackbone(input_channels=MEL["n_mels"], **sizes)
    head = ISTFTHead(dim=sizes["dim"], n_fft=MEL["n_fft"], hop_length=MEL["hop_length"], padding="center")
    return Vocos(feature_extractor=features, backbone=backbone, head=head)


BUILDERS = {"MelSpectrogramFeatures+VocosBackbone+ISTFTHead": mel_vocos}


def waveforms(seed: int, dtype: Any, samples: int) -> torch.Tensor:
    """A (BATCH, samples) batch of seeded noise at 24 kHz (vocos takes (B, T) audio)."""
    gen = torch.Generator().manual_seed(seed)
    return (0.1 * torch.randn(BATCH, samples, generator=gen)).to(dtype)


class CopySynthesis(torch.nn.Module):
    """``Vocos.forward`` with gradients: the waveform reconstructed from the input's own
    features, and the mel L1 between the two as the loss."""

    def __init__(self, vocos: Any) -> None:
        super().__init__()
        from vocos.loss import MelSpecReconstructionLoss

        vocos.feature_extractor = Float32(vocos.feature_extractor)
        vocos.head.istft = Float32(vocos.head.istft)
        self.vocos = vocos
        self.mel_loss = Float32(MelSpecReconstructionLoss(sample_rate=SAMPLE_RATE, n_fft=MEL["n_fft"],
                                                          hop_length=MEL["hop_length"], n_mels=MEL["n_mels"]))

    def forward(self, audio: torch.Tensor) -> Any:
        from transformers.utils import ModelOutput

        features = self.vocos.feature_extractor(audio)
        # The head's complex spectrum is complex64 in a bfloat16 model: its waveform comes
        # back in float32, cast to the model's dtype as the features were.
        waveform = self.vocos.head(self.vocos.backbone(features)).to(audio.dtype)
        loss = self.mel_loss(waveform[..., : audio.shape[-1]], audio)
        return ModelOutput(output=waveform, loss=loss.float())
