"""speechbrain: which rows are speechbrain's, what each repo builds, and how its records come out.

On trnsim every EncoderClassifier family stops at the Fbank front end: speechbrain's STFT is a
complex FFT (``aten::_fft_r2c`` makes complex64), and the trnsim profile has no complex dtype,
so the record's outcome is the device's with that op named. SepFormer has no FFT: it runs
eagerly on trnsim. On the CPU every stage of every family passes.
"""

from __future__ import annotations

import csv
import importlib.util

import pytest

from sweeper.libraries import registry
from sweeper.libraries.base import MissingDependencyError
from sweeper.libraries.speechbrain.library import Speechbrain
from sweeper.records import ModelRef, Origin, Outcome, ReasonKind, Status
from sweeper.settings.config import SweepConfig
from sweeper.settings.errors import ConfigError

installed = pytest.mark.skipif(importlib.util.find_spec("speechbrain") is None,
                               reason="speechbrain is not installed (make install adds it)")

# The speechbrain rows of the top-1000 snapshot and what each is built as.
SNAPSHOT_ROWS = {
    "speechbrain/spkrec-ecapa-voxceleb": "ECAPA_TDNN",
    "speechbrain/spkrec-resnet-voxceleb": "ResNet",
    "speechbrain/lang-id-voxlingua107-ecapa": "ECAPA_TDNN+Xvector.Classifier",
    "speechbrain/lang-id-commonlanguage_ecapa": "ECAPA_TDNN+ECAPA_TDNN.Classifier",
}
# One repo per supported family (embedding model, and each classifier head).
FAMILIES = [
    "speechbrain/spkrec-ecapa-voxceleb",
    "speechbrain/spkrec-resnet-voxceleb",
    "speechbrain/spkrec-xvect-voxceleb",
    "speechbrain/lang-id-voxlingua107-ecapa",
    "speechbrain/lang-id-commonlanguage_ecapa",
]
SEPFORMER = "speechbrain/sepformer-wsj02mix"


def _ref(model_id: str, library: str | None = "speechbrain") -> ModelRef:
    return ModelRef(model_id, 1, library_name=library, source="catalog")


def test_every_speechbrain_row_of_the_snapshot_is_speechbrains_and_named(top1000_csv):
    with top1000_csv.open(newline="") as f:
        rows = [r for r in csv.DictReader(f) if r["library_name"] == "speechbrain"]
    assert {r["id"] for r in rows} == set(SNAPSHOT_ROWS)
    for row in rows:
        ref = ModelRef(row["id"], int(row["rank"]), library_name=row["library_name"], source="catalog")
        library = registry.library_for(ref)
        assert library.name == "speechbrain"
        assert library.architecture(ref) == SNAPSHOT_ROWS[row["id"]]


@installed
@pytest.mark.parametrize(("model_id", "family"), [
    ("speechbrain/asr-crdnn-rnnlm-librispeech", "speech recognition"),
    ("speechbrain/asr-wav2vec2-commonvoice-en", "speech recognition"),
    ("speechbrain/resepformer-wsj02mix", "source separation"),
    ("speechbrain/metricgan-plus-voicebank", "speech enhancement"),
    ("speechbrain/tts-tacotron2-ljspeech", "text to speech"),
    ("speechbrain/vad-crdnn-libriparty", "voice activity detection"),
    ("speechbrain/emotion-recognition-wav2vec2-IEMOCAP", "wav2vec2-based classifier"),
    ("speechbrain/google_speech_command_xvector", "x-vector classifier"),
    ("someone/my-speechbrain-model", "names no speechbrain model"),
])
def test_families_not_built_are_refused_naming_the_family(model_id, family):
    assert Speechbrain().architecture(_ref(model_id)) is None
    with pytest.raises(ConfigError, match=family):
        Speechbrain().build(_ref(model_id), SweepConfig.of(device="cpu"))


@installed
def test_pretrained_weights_are_refused_as_pickles():
    with pytest.raises(ConfigError, match=r"pickles \(\*\.ckpt\)"):
        Speechbrain().build(_ref("speechbrain/spkrec-ecapa-voxceleb"), SweepConfig.of(device="cpu", weights="pretrained"))


def test_a_missing_speechbrain_gives_the_missing_dependency_line(monkeypatch):
    import sweeper.libraries.base as base
    from sweeper.checks.checker import check_model

    importable = base._importable
    monkeypatch.setattr(base, "_importable", lambda name: name != "speechbrain" and importable(name))
    lib = registry.get("speechbrain")
    assert lib.missing() == ["speechbrain"]  # as on a machine without the libraries extra
    with pytest.raises(MissingDependencyError, match="speechbrain models need speechbrain"):
        lib.build(_ref("speechbrain/spkrec-ecapa-voxceleb"), None)
    record = check_model(_ref("speechbrain/spkrec-ecapa-voxceleb"), SweepConfig.of(device="cpu", stages=("load",)))
    assert record.reason.kind is ReasonKind.MISSING_DEPENDENCY and record.reason.op == "speechbrain"
    assert record.outcome is Outcome.ENVIRONMENT
    line = "speechbrain models need speechbrain (not installed; make install (the [libraries] extra))"
    assert record.reason.message.endswith(line)


@installed
def test_a_classifier_repo_runs_encoder_then_head_and_its_loss_reaches_every_class():
    from sweeper.libraries import build

    built = build(_ref("speechbrain/lang-id-voxlingua107-ecapa"), SweepConfig.of(device="cpu"))
    assert built.notes["models"] == "embedding_model=ECAPA_TDNN,classifier=Xvector.Classifier"
    assert built.notes["models_source"] == "name table" and built.notes["weights"] == "tiny"
    assert built.notes["waveform"] == "16000 samples at 16000 Hz"
    assert built.inputs["waveforms"].shape == (2, 16_000)
    out = built.model(**built.inputs)
    assert out["output"].shape == (2, 107)  # VoxLingua107's languages, the released head kept
    out["loss"].backward()
    last = built.model.classifier.out.w
    assert (last.weight.grad.abs().sum(-1) > 0).all()  # cross entropy: every class row gets a gradient


@installed
def test_random_weights_have_the_released_sizes():
    from sweeper.libraries import build

    built = build(_ref("speechbrain/spkrec-ecapa-voxceleb"), SweepConfig.of(device="cpu", weights="random"))
    assert 20_000_000 < built.num_parameters < 21_500_000  # ECAPA-TDNN 1024 channels, 192-d embedding
    assert built.inputs["waveforms"].shape == (2, 48_000)  # the recipes' 3 s crops


@installed
@pytest.mark.parametrize("model_id", ["speechbrain/spkrec-ecapa-voxceleb", "speechbrain/spkrec-resnet-voxceleb",
                                      "speechbrain/lang-id-commonlanguage_ecapa"])
def test_bfloat16_runs_with_features_in_float32_and_pooling_statistics_cast_back(model_id):
    import torch

    from sweeper.libraries import build

    built = build(_ref(model_id), SweepConfig.of(device="cpu", dtype="bfloat16"))
    # torch's CPU FFT has no bfloat16 (the Fbank runs in float32); ECAPA's attentive pooling
    # makes float32 statistics that its next convolution gets in the weights' dtype.
    out = built.model(**built.inputs)
    assert out["output"].dtype == torch.bfloat16 and out["output"].shape[0] == 2
    assert torch.isfinite(out["output"].float()).all() and out["loss"].item() > 0
    out["loss"].backward()
    assert "autocast" in built.notes
    assert "autocast" not in build(_ref(model_id), SweepConfig.of(device="cpu")).notes  # float32 runs untouched


def _record(model_id: str, device: str):
    from sweeper.checks.checker import check_model

    return check_model(_ref(model_id), SweepConfig.of(device=device, collect_all=True))


@installed
@pytest.mark.parametrize("model_id", FAMILIES)
def test_each_family_stops_on_trnsim_at_the_complex_fft_the_device_lacks(model_id, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    record = _record(model_id, "trnsim")
    assert record.stages["load"].status is Status.PASS, record.reason
    # Every stage runs under --collect-all, but for the shapes stage after a compile that
    # found a blocker (other shapes would only meet it again).
    assert all(r.status is not Status.BLOCKED for name, r in record.stages.items() if name != "shapes"), record.stages
    assert record.stages["compile"].status is Status.PASS or record.stages["shapes"].status is Status.BLOCKED
    assert record.outcome is Outcome.DEVICE
    assert record.reason.op == "aten::_fft_r2c" and record.reason.kind is ReasonKind.UNSUPPORTED_DTYPE
    assert "complex64" in record.reason.message
    assert record.stages["forward"].reason.op == "aten::_fft_r2c"
    for reason in record.blockers:  # the device's (or its lowering tool's) findings only
        assert reason.origin in (Origin.DEVICE, Origin.LOWERING_TOOL), reason
    assert record.notes["models_source"] == "name table"
    assert record.num_parameters and record.num_parameters < 1_000_000


@installed
def test_sepformer_separates_each_source_and_runs_eagerly_on_trnsim(monkeypatch):
    from sweeper.libraries import build

    lib = registry.library_for(_ref("speechbrain/sepformer-wsj03mix"))
    assert lib.architecture(_ref("speechbrain/sepformer-wsj03mix")) == "SepFormer"
    built = build(_ref("speechbrain/sepformer-wsj03mix"), SweepConfig.of(device="cpu"))
    out = built.model(**built.inputs)
    assert out["output"].shape == (2, 8_000, 3)  # 3 speakers, the mixture's length (1 s at 8 kHz) kept
    assert built.notes["sources"] == "3" and built.notes["waveform"] == "8000 samples at 8000 Hz"
    assert build(_ref("speechbrain/sepformer-whamr16k"), SweepConfig.of(device="cpu")).inputs["mixture"].shape == (2, 16_000)

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    record = _record(SEPFORMER, "trnsim")
    for stage in ("load", "to_device", "forward", "backward"):  # no FFT: nothing complex to refuse
        assert record.stages[stage].status is Status.PASS, record.stages[stage]
    assert record.max_abs_diff is not None
    assert record.outcome in (Outcome.PASS, Outcome.DEVICE, Outcome.LOWERING_TOOL), record.reason
    for reason in record.blockers:
        assert reason.origin in (Origin.DEVICE, Origin.LOWERING_TOOL), reason


@installed
@pytest.mark.slow
@pytest.mark.parametrize("model_id", [*FAMILIES, SEPFORMER])
def test_each_family_passes_every_stage_on_cpu(model_id, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    record = _record(model_id, "cpu")
    assert record.status is Status.PASS, record.reason
    assert record.outcome is Outcome.PASS
    assert all(r.status is Status.PASS for r in record.stages.values()), record.stages
