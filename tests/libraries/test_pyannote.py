"""pyannote.audio: which rows are pyannote's, which models each repo is, and what is built."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys

import pytest

from sweeper.libraries import registry
from sweeper.libraries.pyannote.library import Pyannote
from sweeper.records import ModelRef
from sweeper.settings.config import SweepConfig
from sweeper.settings.errors import ConfigError

installed = pytest.mark.skipif(importlib.util.find_spec("pyannote") is None
                               or importlib.util.find_spec("pyannote.audio") is None,
                               reason="pyannote.audio is not installed (make install adds it)")

# The pyannote rows of the top-1000 snapshot (library named, or none and the id says so).
CATALOG_ROWS = {
    ("pyannote/wespeaker-voxceleb-resnet34-LM", "pyannote-audio"): "WeSpeakerResNet34",
    ("pyannote/segmentation-3.0", "pyannote-audio"): "PyanNet",
    ("pyannote/speaker-diarization-3.1", "pyannote-audio"): "PyanNet+WeSpeakerResNet34",
    ("pyannote/segmentation", "pyannote-audio"): "PyanNet",
    ("pyannote/speaker-diarization", "pyannote-audio"): "PyanNet+WeSpeakerResNet34",
    ("pyannote/voice-activity-detection", "pyannote-audio"): "PyanNet",
    ("pyannote/brouhaha", "pyannote-audio"): "PyanNet",
    ("pyannote/embedding", "pyannote-audio"): "XVectorSincNet",
    ("EonNextPlatform/pyannote-wespeaker-voxceleb-resnet34-LM", "pyannote-audio"): "WeSpeakerResNet34",
    ("Revai/reverb-diarization-v1", "pyannote-audio"): "PyanNet+WeSpeakerResNet34",
    ("tezuesh/diarization", None): "PyanNet+WeSpeakerResNet34",
    ("tezuesh/segmentation", None): "PyanNet",
    ("tezuesh/overlapped-speech-detection", None): "PyanNet",
    ("Revai/pyannote-wespeaker-voxceleb-resnet34-LM", None): "WeSpeakerResNet34",
}


def _ref(model_id: str, library: str | None = "pyannote-audio", **kw) -> ModelRef:
    return ModelRef(model_id, 1, library_name=library, source="catalog", **kw)


@pytest.mark.parametrize(("key", "architecture"), CATALOG_ROWS.items(), ids=[k[0] for k in CATALOG_ROWS])
def test_every_pyannote_row_of_the_snapshot_is_pyannotes_and_named(key, architecture):
    model_id, library = key
    lib = registry.library_for(_ref(model_id, library))
    assert lib.name == "pyannote"
    assert lib.architecture(_ref(model_id, library)) == architecture


@pytest.mark.parametrize(("model_id", "model_type"), [
    ("someone/bert-base-segmentation", None),  # the repo name is not pyannote's own
    ("nvidia/speakerverification_en_titanet_large", None),
    ("tezuesh/segmentation", "wav2vec2"),  # the listing knows a transformers model type
])
def test_rows_with_no_library_stay_transformers_unless_the_id_says_pyannote(model_id, model_type):
    assert registry.library_for(_ref(model_id, None, model_type=model_type)).name == "transformers"


def test_pretrained_weights_are_refused_as_pickles():
    cfg = SweepConfig.of(device="cpu", weights="pretrained")
    if Pyannote().missing():
        pytest.skip("pyannote.audio is not installed")
    with pytest.raises(ConfigError, match="pickles"):
        Pyannote().build(_ref("pyannote/segmentation-3.0"), cfg)


@installed
def test_segmentation_is_the_powerset_task_and_its_loss_reaches_every_class():
    import torch

    from sweeper.libraries import build

    built = build(_ref("pyannote/segmentation-3.0"), SweepConfig.of(device="cpu"))
    out = built.model(**built.inputs)
    # 3 speakers, at most 2 at once: {}, 3 singles, 3 pairs = 7 powerset classes, log-probabilities.
    assert out["output"].shape[0] == 2 and out["output"].shape[-1] == 7
    assert torch.allclose(out["output"].exp().sum(-1), torch.ones(out["output"].shape[:2]), atol=1e-5)
    assert built.inputs["waveforms"].shape[:2] == (2, 1)
    out["loss"].backward()
    classifier = built.model.parts["segmentation"].classifier
    assert (classifier.weight.grad.abs().sum(-1) > 0).all()  # every class row gets a gradient


# In a fresh interpreter: here pyannote.audio may already be imported, and its import is
# what patches.
_LEAVES_TORCH_AS_FOUND = """
import torch
from sweeper.executors.worker import leaks, snapshot
from sweeper.libraries import build
from sweeper.records import ModelRef
from sweeper.settings.config import SweepConfig
before = snapshot()
built = build(ModelRef("pyannote/speaker-diarization-3.1", 1, library_name="pyannote-audio", source="catalog"),
              SweepConfig.of(device="cpu"))
built.model(**built.inputs)["loss"].backward()
print("leaked:", leaks(before, snapshot()))
"""


@installed
def test_a_pyannote_model_leaves_torch_compile_as_it_found_it():
    # Lightning (under pyannote.audio) wraps torch.compile; a worker that finds a patch
    # recycles, which made every pyannote model cost a fresh interpreter.
    done = subprocess.run([sys.executable, "-c", _LEAVES_TORCH_AS_FOUND], capture_output=True, text=True,
                          env={**os.environ, "HF_HUB_OFFLINE": "1"}, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip().splitlines()[-1] == "leaked: []"


@installed
def test_a_diarization_pipeline_checks_both_models_and_lists_them():
    from sweeper.libraries import build

    built = build(_ref("tezuesh/diarization", None), SweepConfig.of(device="cpu"))
    assert built.notes["models"] == "segmentation=PyanNet,embedding=WeSpeakerResNet34"
    assert built.notes["library"].startswith("pyannote-audio (from the id")
    out = built.model(**built.inputs)
    assert out["embedding"].shape == (2, 64)
    out["loss"].backward()
    for role, part in built.model.parts.items():
        assert any(p.grad is not None and p.grad.abs().max() > 0 for p in part.parameters()), role
    assert os.environ["PYANNOTE_METRICS_ENABLED"] == "false"  # no usage telemetry leaves the machine


@installed
def test_wespeaker_runs_in_bfloat16_with_its_fbank_in_float32():
    import torch

    from sweeper.libraries import build

    built = build(_ref("pyannote/wespeaker-voxceleb-resnet34-LM"), SweepConfig.of(device="cpu", dtype="bfloat16"))
    out = built.model(**built.inputs)  # torch's CPU FFT has no bfloat16: the fbank runs in float32
    assert out["output"].dtype == torch.bfloat16 and torch.isfinite(out["output"].float()).all()
