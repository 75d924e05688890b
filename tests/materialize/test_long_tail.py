"""Long-tail zoo types each fixed by a general rule: they build tiny, run forward and
backward (shrink rules for experts, codecs, SSM groups, KV sharing, adapter feature
layers, depthwise groups; input widths fitted to the first layer that reads them)."""

from __future__ import annotations

import math

import pytest
import torch

from sweeper.libraries.transformers import materialize
from sweeper.libraries.transformers.fitting import fit_widths
from sweeper.settings.config import SweepConfig
from sweeper.sources.zoo import zoo_ref

CFG = SweepConfig()


def _loss(out, has_labels):
    if has_labels and getattr(out, "loss", None) is not None:
        return out.loss
    values = out.values() if hasattr(out, "values") else out
    floats = [v for v in values if torch.is_tensor(v) and v.is_floating_point() and v.requires_grad]
    return sum(v.float().mean() for v in floats)


@pytest.mark.parametrize(
    ("model_type", "rule"),
    [
        ("mamba2", "SSM groups divide the shrunk heads"),
        ("longcat_flash", "zero experts and expert FFN widths shrink"),
        ("vibevoice_acoustic_tokenizer", "codec base filters capped"),
        ("gemma3n_text", "no KV sharing among the kept layers"),
        ("molmo2", "adapter feature layers index the shrunk tower"),
        ("csm", "depthwise upsample groups follow the width"),
        ("granite_speech5_ctc", "stacked mel features fitted"),
        ("muse_spark_vision", "temporal patch depth fitted"),
        ("mimi_decoder", "codec latents, channels-first"),
        ("vibevoice_acoustic_tokenizer_encoder", "a mono conv front end reads a waveform"),
        ("pix2struct", "flattened patches led by their grid positions"),
        ("muse_spark_audio", "waveform length a multiple of the conv hop"),
        ("qwen3_asr_encoder", "features in whole 2·n_window chunks"),
        ("lightglue", "an image-pair axis as the pixel variant"),
        ("gemma3n_audio", "mel frames with a nothing-padded mask"),
        ("speech-encoder-decoder", "plain inputs built as the encoder's main input"),
        ("perceiver", "plain inputs through a text preprocessor are ids"),
        ("decision_transformer", "offline-RL trajectories from state and action sizes"),
    ],
)
def test_long_tail_type_builds_runs_and_trains(model_type, rule):
    from transformers.models.auto.configuration_auto import CONFIG_MAPPING_NAMES

    if model_type not in CONFIG_MAPPING_NAMES:  # an older transformers (make test-lowest)
        import transformers

        pytest.skip(f"transformers {transformers.__version__} has no model type {model_type!r}")
    built = materialize(zoo_ref(model_type, 1), CFG)
    assert built.num_parameters < CFG.materialise.max_parameters, rule
    loss = _loss(built.model(**built.inputs), built.has_labels)
    assert math.isfinite(float(loss)), rule
    loss.backward()
    assert any(p.grad is not None for p in built.model.parameters()), rule


def test_fit_widths_rebuilds_the_input_the_first_layer_reads():
    model = torch.nn.Sequential(torch.nn.Linear(12, 4))
    fitted = fit_widths(_Wrapped(model), {"x": torch.randn(2, 5, 3)})
    assert fitted is not None and fitted["x"].shape == (2, 5, 12)
    assert fit_widths(_Wrapped(model), {"x": torch.randn(2, 5, 12)}) is None


class _Wrapped(torch.nn.Module):
    """A keyword-argument forward, as a transformers model has."""

    def __init__(self, inner):
        super().__init__()
        self.inner = inner

    def forward(self, x):
        return self.inner(x)
