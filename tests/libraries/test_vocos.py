"""vocos: which rows are vocos's, what is built, and what each device makes of it."""

from __future__ import annotations

import importlib.util

import pytest

from sweeper.libraries import registry
from sweeper.libraries.vocos.library import ENCODEC, MEL, Vocos
from sweeper.records import ModelRef, Origin, Outcome, ReasonKind, Status
from sweeper.settings.config import SweepConfig
from sweeper.settings.errors import ConfigError

installed = pytest.mark.skipif(importlib.util.find_spec("vocos") is None,
                               reason="vocos is not installed (make install adds it)")
MEL_ID = "charactr/vocos-mel-24khz"


def _ref(model_id: str, library: str | None = None, **kw) -> ModelRef:
    return ModelRef(model_id, 1, library_name=library, source="catalog", **kw)


def test_the_snapshots_vocos_row_is_vocos_and_named(top1000_csv):
    from sweeper.sources.catalog import CatalogSource

    refs = list(CatalogSource(top1000_csv).refs())
    vocos = {r.model_id: r for r in refs if Vocos().claims(r) or Vocos().owns(r)}
    assert list(vocos) == [MEL_ID]  # and no other row of the snapshot is vocos's
    row = vocos[MEL_ID]
    assert registry.library_for(row).name == "vocos"
    assert row.library_name is None and row.model_type is None  # the listing names nothing
    assert registry.library_for(row).architecture(row) == MEL


@pytest.mark.parametrize(("model_id", "library", "architecture"), [
    (MEL_ID, None, MEL),
    ("charactr/vocos-encodec-24khz", None, ENCODEC),
    ("someone/my_vocos.mel", None, MEL),
    ("someone/vocoder-checkpoints", "vocos", None),  # the listing names the library
])
def test_vocos_rows_are_claimed_from_the_repo_name_or_owned(model_id, library, architecture):
    lib = registry.library_for(_ref(model_id, library))
    assert lib.name == "vocos"
    assert lib.architecture(_ref(model_id, library)) == architecture


@pytest.mark.parametrize(("model_id", "library", "model_type"), [
    ("vocos-lab/bert-base-uncased", None, None),  # vocos in the organisation only
    ("someone/vocosity-24khz", None, None),  # not the word vocos
    ("someone/vocos-mel-24khz", None, "bert"),  # the listing knows a transformers model type
    ("someone/vocos-mel-24khz", "transformers", None),  # the listing names another library
])
def test_rows_not_plainly_vocos_are_not_claimed(model_id, library, model_type):
    assert registry.library_for(_ref(model_id, library, model_type=model_type)).name == "transformers"


@installed
@pytest.mark.parametrize(("model_id", "weights", "match"), [
    (MEL_ID, "pretrained", "pickles"),
    ("charactr/vocos-encodec-24khz", "tiny", "encodec_24khz.*cannot be built offline"),
    ("someone/vocos-hifi", "tiny", "names no vocos feature extractor"),
])
def test_what_cannot_be_built_is_refused_by_name(model_id, weights, match):
    with pytest.raises(ConfigError, match=match):
        Vocos().build(_ref(model_id), SweepConfig.of(device="cpu", weights=weights))


@installed
def test_copy_synthesis_rebuilds_the_input_and_its_mel_loss_reaches_every_part():

    from sweeper.libraries import build

    built = build(_ref(MEL_ID), SweepConfig.of(device="cpu"))
    audio = built.inputs["audio"]
    assert audio.shape == (2, 4096)
    assert built.notes["library"].startswith("vocos (from the id")
    out = built.model(**built.inputs)
    assert out["output"].shape == audio.shape  # a waveform as long as the input
    # The mel L1 of a waveform against itself is zero: the loss compares output and input.
    assert built.model.mel_loss(audio, audio).item() == 0 and out["loss"].item() > 0
    out["loss"].backward()
    vocos = built.model.vocos
    for part in (vocos.backbone.embed, vocos.backbone.convnext[-1].pwconv2, vocos.head.out):
        assert part.weight.grad.abs().max() > 0, part
    # The released STFT shapes are kept in a tiny build: 1024-point FFT, hop 256, 100 mel bands.
    assert vocos.head.out.out_features == 1024 + 2 and vocos.head.istft.inner.hop_length == 256
    assert vocos.feature_extractor(audio).shape == (2, 100, 4096 // 256 + 1)


@installed
def test_random_weights_are_the_released_sizes():
    from sweeper.libraries import build

    built = build(_ref(MEL_ID), SweepConfig.of(device="cpu", weights="random"))
    assert built.num_parameters == 13_531_650  # vocos-mel-24khz: 13.5M parameters
    assert built.inputs["audio"].shape == (2, 16_384)


@installed
def test_bfloat16_runs_with_its_spectral_parts_in_float32():
    import torch

    from sweeper.libraries import build

    built = build(_ref(MEL_ID), SweepConfig.of(device="cpu", dtype="bfloat16"))
    assert built.model.vocos.backbone.embed.weight.dtype == torch.bfloat16
    assert built.model.vocos.head.istft.inner.window.dtype == torch.float32  # torch's CPU FFT has no bfloat16
    out = built.model(**built.inputs)
    assert out["output"].dtype == torch.bfloat16 and torch.isfinite(out["output"].float()).all()


def _record(device: str, **settings):
    from sweeper.checks.checker import check_model

    return check_model(_ref(MEL_ID), SweepConfig.of(device=device, **settings))


@installed
@pytest.mark.parametrize("backend", [
    "aot_eager", pytest.param(None, marks=pytest.mark.slow, id="inductor")])  # inductor: ~2 min here
def test_every_stage_passes_on_cpu(backend, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    record = _record("cpu", compile_backend=backend)
    assert [s for s, r in record.stages.items() if r.status is not Status.PASS] == [], record.reason
    assert record.outcome is Outcome.PASS


@installed
def test_on_trnsim_the_complex_stft_is_the_devices_blocker(monkeypatch):
    import torch

    from sweeper.devices.trnsim.profile import load_profile

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    assert torch.complex64 not in load_profile().dtypes  # what the profile declares
    record = _record("trnsim", collect_all=True)
    assert record.stages["load"].status is Status.PASS
    # Every stage runs under --collect-all, but for the shapes stage after a compile that
    # found a blocker (other shapes would only meet it again).
    assert all(r.status is not Status.BLOCKED for name, r in record.stages.items() if name != "shapes"), record.stages
    assert record.stages["compile"].status is Status.PASS or record.stages["shapes"].status is Status.BLOCKED
    assert record.stages["forward"].status is Status.FAIL
    assert record.outcome is Outcome.DEVICE
    first = record.reason
    assert (first.kind, first.op, first.origin) == (ReasonKind.UNSUPPORTED_DTYPE, "aten::_fft_r2c", Origin.DEVICE)
    assert "complex64" in first.message
    for reason in record.blockers:  # the device's (or its lowering tool's) findings only
        assert reason.origin in (Origin.DEVICE, Origin.LOWERING_TOOL), reason
