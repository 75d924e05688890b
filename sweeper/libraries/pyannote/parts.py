"""The pyannote.audio models a Hub repo is, built small, with waveform inputs and losses.

Every model takes ``waveforms`` of shape (batch, 1, samples) at 16 kHz: one chunk of the
segmentation task's duration (10 s; tiny builds a 2 s chunk). Losses follow what the models are trained on: the
powerset segmentation output is log-probabilities, so the negative log-likelihood of
seeded frame targets; an embedding, the squared distance to a seeded target vector (the
mean of an embedding would give every dimension the same gradient).
"""

from __future__ import annotations

from typing import Any

import torch

SAMPLE_RATE = 16_000
CHUNK_SECONDS = 10.0
# Tiny builds run on a shorter chunk (the models take any length; 10 s through an LSTM
# of 589 steps makes a tiny check tens of seconds on a simulated device).
TINY_SECONDS = 2.0
BATCH = 2
# The segmentation task of pyannote/segmentation-3.0: 3 speakers per chunk, at most 2 at once.
SPEAKERS = 3
MAX_SPEAKERS_PER_FRAME = 2
# Tiny sizes; "random" builds use the released models' sizes (segmentation-3.0: 4 LSTM layers).
TINY_PYANNET = {"lstm": {"hidden_size": 32, "num_layers": 2}, "linear": {"hidden_size": 32, "num_layers": 2}}
FULL_PYANNET = {"lstm": {"hidden_size": 128, "num_layers": 4}, "linear": {"hidden_size": 128, "num_layers": 2}}
TINY_EMBEDDING = 64


def waveforms(seed: int, dtype: Any, seconds: float = CHUNK_SECONDS) -> Any:
    """A (BATCH, 1, samples) batch of seeded noise at the model's sample rate."""
    gen = torch.Generator().manual_seed(seed)
    return (0.1 * torch.randn(BATCH, 1, int(seconds * SAMPLE_RATE), generator=gen)).to(dtype)


def segmentation_specifications() -> Any:
    """The specifications of pyannote's speaker segmentation task (powerset multi-class)."""
    from pyannote.audio.core.task import Problem, Resolution, Specifications

    return Specifications(problem=Problem.MONO_LABEL_CLASSIFICATION, resolution=Resolution.FRAME,
                          duration=CHUNK_SECONDS, classes=[f"speaker#{i + 1}" for i in range(SPEAKERS)],
                          powerset_max_classes=MAX_SPEAKERS_PER_FRAME, permutation_invariant=True)


def pyannet(tiny: bool) -> Any:
    """PyanNet (SincNet > LSTM > linear > powerset classifier) with the task's layers built."""
    from pyannote.audio.models.segmentation import PyanNet

    model = PyanNet(**(TINY_PYANNET if tiny else FULL_PYANNET), sample_rate=SAMPLE_RATE)
    model.specifications = segmentation_specifications()
    model.build()  # the classifier and activation the specifications call for
    return model


def wespeaker_resnet34(tiny: bool) -> Any:
    """WeSpeakerResNet34 (kaldi fbank > ResNet34 > statistics pooling > 256-d embedding);
    tiny: one narrow block per stage (the fbank front end and pooling unchanged). Not 8
    channels: torch 2.13's CPU backward of a 1x1 stride-2 convolution over a channels-last
    8-channel input (the first shortcut) dies with a segmentation fault."""
    from pyannote.audio.models.embedding import WeSpeakerResNet34
    from pyannote.audio.models.embedding.wespeaker.resnet import BasicBlock, ResNet

    model = WeSpeakerResNet34(sample_rate=SAMPLE_RATE)
    _fbank_in_float32(model)
    if tiny:
        model.resnet = ResNet(BasicBlock, [1, 1, 1, 1], m_channels=16, feat_dim=model.hparams.num_mel_bins,
                              embed_dim=TINY_EMBEDDING, pooling_func="TSTP", two_emb_layer=False)
    return model


def _fbank_in_float32(model: Any) -> None:
    """Compute the kaldi fbank front end in float32 whatever the model's dtype: torch's FFT
    has no bfloat16 or float16 kernels on the CPU (as under autocast, features are cast back)."""
    compute = model.compute_fbank

    def fbank(waveforms: Any) -> Any:
        return compute(waveforms.float()).to(waveforms.dtype)

    model.compute_fbank = fbank


def xvector_sincnet(tiny: bool) -> Any:
    """XVectorSincNet (SincNet > TDNN > statistics pooling > embedding)."""
    from pyannote.audio.models.embedding import XVectorSincNet

    return XVectorSincNet(sample_rate=SAMPLE_RATE, dimension=TINY_EMBEDDING if tiny else 512)


BUILDERS = {"PyanNet": pyannet, "WeSpeakerResNet34": wespeaker_resnet34, "XVectorSincNet": xvector_sincnet}


def targets(name: str, model: Any, num_samples: int, seed: int) -> Any:
    """Seeded targets for ``model``'s loss: powerset classes per frame, or an embedding."""
    gen = torch.Generator().manual_seed(seed + 1)
    if name == "PyanNet":
        frames = model.num_frames(num_samples)
        return torch.randint(0, model.dimension, (BATCH, frames), generator=gen)
    return torch.randn(BATCH, model.dimension, generator=gen)


def loss(name: str, output: Any, target: Any) -> Any:
    """NLL of the powerset log-probabilities, or the squared distance of an embedding."""
    output = output.float()
    if name == "PyanNet":
        return torch.nn.functional.nll_loss(output.reshape(-1, output.shape[-1]), target.reshape(-1))
    return torch.nn.functional.mse_loss(output, target)


class Models(torch.nn.Module):
    """Several pyannote models run on one waveform batch (a pipeline's segmentation and
    embedding models); the output is each model's output and the sum of their losses."""

    def __init__(self, parts: dict[str, tuple[str, Any]]) -> None:
        super().__init__()
        self.kinds = {role: kind for role, (kind, _) in parts.items()}
        self.parts = torch.nn.ModuleDict({role: model for role, (_, model) in parts.items()})

    def forward(self, waveforms: Any, **targets: Any) -> Any:
        from transformers.utils import ModelOutput

        outputs = {role: model(waveforms) for role, model in self.parts.items()}
        total = sum(loss(self.kinds[role], out, targets[role]) for role, out in outputs.items())
        return ModelOutput(output=next(iter(outputs.values())), **outputs, loss=total)
