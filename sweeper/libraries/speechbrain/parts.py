"""The speechbrain models a Hub repo is, built small, as speechbrain's EncoderClassifier runs them.

``EncoderClassifier.encode_batch`` computes Fbank features from the waveform (float32),
normalises them per sentence (``InputNormalization``), and runs the embedding model with the
waveforms' relative lengths; ``classify_batch`` adds the classifier head. The sizes below are
the released repos' ``hyperparams.yaml`` (as in speechbrain's recipes they come from); tiny
keeps the feature front end and the class count, with narrow channels and one block per
stage. Inputs are seeded waveforms of shape (batch, samples) at 16 kHz.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import torch

SAMPLE_RATE = 16_000
BATCH = 2
# The recipes train on 3 s crops; tiny builds run 1 s (the models take any length).
FULL_SECONDS = 3.0
TINY_SECONDS = 1.0


@dataclass(frozen=True)
class Spec:
    """One speechbrain repo's models: the embedding model's class and released sizes, the
    Fbank's mel bins, and the classifier head (None for a speaker-verification repo, which
    EncoderClassifier runs as an embedding extractor)."""

    embedding: str  # ECAPA_TDNN | ResNet | Xvector
    n_mels: int
    sizes: dict[str, Any] = field(default_factory=dict)
    classifier: str | None = None  # "ECAPA_TDNN.Classifier" | "Xvector.Classifier"
    classifier_sizes: dict[str, Any] = field(default_factory=dict)


_ECAPA_1024 = {"channels": [1024, 1024, 1024, 1024, 3072], "kernel_sizes": [5, 3, 3, 3, 1],
               "dilations": [1, 2, 3, 4, 1], "attention_channels": 128}

# Id patterns -> the repo's models, first match wins; numbers from each repo's hyperparams.yaml.
SPECS: tuple[tuple[str, Spec], ...] = (
    # lang-id-voxlingua107-ecapa: 60 mels, 256-d embedding, an x-vector classifier (one 512 block) over 107 languages.
    (r"lang-id-voxlingua107-ecapa", Spec("ECAPA_TDNN", 60, {**_ECAPA_1024, "lin_neurons": 256}, "Xvector.Classifier",
                                         {"lin_blocks": 1, "lin_neurons": 512, "out_neurons": 107})),
    # lang-id-commonlanguage_ecapa: fine-tuned from spkrec-ecapa-voxceleb (80 mels, 192-d); cosine classifier, 45 languages.
    (r"lang-id-commonlanguage[_-]ecapa", Spec("ECAPA_TDNN", 80, {**_ECAPA_1024, "lin_neurons": 192},
                                              "ECAPA_TDNN.Classifier", {"out_neurons": 45})),
    # urbansound8k_ecapa: the speaker ECAPA over 10 sound classes.
    (r"urbansound8k[_-]ecapa", Spec("ECAPA_TDNN", 80, {**_ECAPA_1024, "lin_neurons": 192},
                                    "ECAPA_TDNN.Classifier", {"out_neurons": 10})),
    # spkrec-ecapa-voxceleb: 80 mels, channels 1024 x4 + 3072, 192-d speaker embedding.
    (r"spkrec-ecapa", Spec("ECAPA_TDNN", 80, {**_ECAPA_1024, "lin_neurons": 192})),
    # spkrec-resnet-voxceleb: 80 mels, ResNet-34 layout (3, 4, 6, 3 blocks), 256-d embedding.
    (r"spkrec-resnet", Spec("ResNet", 80, {"channels": [128, 128, 256, 256], "strides": [1, 2, 2, 2],
                                          "block_sizes": [3, 4, 6, 3], "lin_neurons": 256})),
    # spkrec-xvect-voxceleb: 24 mels, five TDNN layers (512 x4, 1500), 512-d x-vector.
    (r"spkrec-xvect", Spec("Xvector", 24, {"tdnn_blocks": 5, "tdnn_channels": [512, 512, 512, 512, 1500],
                                          "tdnn_kernel_sizes": [5, 3, 3, 1, 1], "tdnn_dilations": [1, 2, 3, 1, 1],
                                          "lin_neurons": 512})),
)

# Tiny: the released layout, narrow. ECAPA's Res2Net splits channels in 8 (a multiple of 8 is
# required); ResNet not at 8 channels (torch 2.13's CPU backward of a 1x1 stride-2 convolution
# over 8 channels-last channels crashes, as noted for pyannote's WeSpeaker).
TINY = {
    "ECAPA_TDNN": {"channels": [16, 16, 16, 16, 48], "attention_channels": 8, "se_channels": 8, "lin_neurons": 16},
    "ResNet": {"channels": [16, 16, 32, 32], "block_sizes": [1, 1, 1, 1], "lin_neurons": 16},
    "Xvector": {"tdnn_channels": [16, 16, 16, 16, 48], "lin_neurons": 16},
}
TINY_CLASSIFIER = {"lin_neurons": 16}


def waveforms(seed: int, dtype: Any, seconds: float) -> Any:
    """A (BATCH, samples) batch of seeded noise at 16 kHz."""
    gen = torch.Generator().manual_seed(seed)
    return (0.1 * torch.randn(BATCH, int(seconds * SAMPLE_RATE), generator=gen)).to(dtype)


def _embedding_model(spec: Spec, tiny: bool) -> Any:
    from speechbrain.lobes.models import ECAPA_TDNN, ResNet, Xvector

    sizes = {**spec.sizes, **(TINY[spec.embedding] if tiny else {})}
    if spec.embedding == "ECAPA_TDNN":
        return ECAPA_TDNN.ECAPA_TDNN(input_size=spec.n_mels, **sizes)
    if spec.embedding == "ResNet":
        return ResNet.ResNet(input_size=spec.n_mels, **sizes)
    return Xvector.Xvector(in_channels=spec.n_mels, activation=torch.nn.LeakyReLU, **sizes)


def _classifier(spec: Spec, embedding_size: int, tiny: bool) -> Any:
    from speechbrain.lobes.models import ECAPA_TDNN, Xvector

    sizes = {**spec.classifier_sizes, **(TINY_CLASSIFIER if tiny and "lin_neurons" in spec.classifier_sizes else {})}
    if spec.classifier == "ECAPA_TDNN.Classifier":
        return ECAPA_TDNN.Classifier(input_size=embedding_size, **sizes)
    return Xvector.Classifier(input_shape=[None, None, embedding_size], activation=torch.nn.LeakyReLU, **sizes)


class EncoderClassifier(torch.nn.Module):
    """Fbank -> sentence mean normalisation -> embedding model (-> classifier), as
    speechbrain's ``EncoderClassifier`` runs them; the output is the embedding, or the
    classifier's scores, of shape (batch, size), and ``loss`` one worth comparing."""

    def __init__(self, spec: Spec, tiny: bool) -> None:
        super().__init__()
        from speechbrain.lobes.features import Fbank
        from speechbrain.processing.features import InputNormalization

        self.compute_features = Fbank(n_mels=spec.n_mels)
        self.mean_var_norm = InputNormalization(norm_type="sentence", std_norm=False)
        self.embedding_model = _embedding_model(spec, tiny)
        size = (TINY[spec.embedding] if tiny else spec.sizes)["lin_neurons"]
        self.classifier = None if spec.classifier is None else _classifier(spec, size, tiny)
        self.output_size = size if self.classifier is None else spec.classifier_sizes["out_neurons"]

    def forward(self, waveforms: Any, target: Any) -> Any:
        from transformers.utils import ModelOutput

        # Relative lengths as encode_batch makes them when none are given: every row whole. In
        # the model's dtype: the masks speechbrain makes from them take their dtype, and a
        # float32 mask would turn a bfloat16 model's activations back to float32 (speechbrain
        # itself runs bfloat16 under autocast, which sweeper's dtype setting is not).
        wav_lens = torch.ones(waveforms.shape[0], device=waveforms.device, dtype=waveforms.dtype)
        # Features in float32 whatever the model's dtype (encode_batch casts the waveform to
        # float; torch's CPU FFT has no bfloat16 kernel), then back to the model's dtype.
        feats = self.compute_features(waveforms.float()).to(waveforms.dtype)
        feats = self.mean_var_norm(feats, wav_lens)
        out = self.embedding_model(feats, wav_lens)
        if self.classifier is not None:
            out = self.classifier(out)
        out = out.squeeze(1)
        return ModelOutput(output=out, loss=loss(self.classifier is not None, out, target))


def cast_like_autocast(model: torch.nn.Module) -> int:
    """Cast a convolution's floating input to its weights' dtype where they differ, as autocast
    would; returns how many convolutions got the hook. speechbrain runs half precision under
    autocast, and its code relies on that: ECAPA's attentive pooling computes the statistics
    it feeds back to a convolution in float32 (``mask.sum(...).float()``), which a model
    converted to bfloat16 then refuses (input float, bias bfloat16)."""

    def cast(module: torch.nn.Module, args: tuple[Any, ...]) -> tuple[Any, ...] | None:
        x = args[0]
        if torch.is_floating_point(x) and x.dtype != module.weight.dtype:
            return (x.to(module.weight.dtype), *args[1:])
        return None

    convs = [m for m in model.modules() if isinstance(m, torch.nn.Conv1d)]
    for conv in convs:
        conv.register_forward_pre_hook(cast)
    return len(convs)


def targets(model: EncoderClassifier, seed: int) -> Any:
    """Seeded targets: a class per row for a classifier, else an embedding-sized vector."""
    gen = torch.Generator().manual_seed(seed + 1)
    if model.classifier is not None:
        return torch.randint(0, model.output_size, (BATCH,), generator=gen)
    return torch.randn(BATCH, model.output_size, generator=gen)


def loss(classifies: bool, output: Any, target: Any) -> Any:
    """Cross entropy of the classifier's scores (log-probabilities or cosine scores), or the
    squared distance of an embedding to its target (its mean would give every dimension
    the same gradient)."""
    output = output.float()
    if classifies:
        return torch.nn.functional.cross_entropy(output, target)
    return torch.nn.functional.mse_loss(output, target.float())
