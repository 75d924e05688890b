"""Recording, strict mode, errors, and TrnsimDevice as the sweep sees it."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

from sweeper.records import Reason, ReasonKind


def _upsample() -> torch.Tensor:
    return F.interpolate(torch.randn(1, 1, 4, 4, device="trnsim"), scale_factor=2, mode="bilinear")


def test_recording_counts_ops_and_fallbacks(trnsim):
    x = torch.randn(4, 4, device="trnsim")
    with trnsim.recording() as rec:
        (x @ x).relu()
        _upsample()
    assert rec.ops["aten::mm"] == 1
    assert rec.ops["aten::relu"] == 1
    assert rec.fallback_ops == {"aten::upsample_bilinear2d": 1}
    assert rec.errors == []


def test_recordings_nest_and_stop_counting_after_the_block(trnsim):
    x = torch.randn(2, device="trnsim")
    with trnsim.recording() as outer:
        x.neg()
        with trnsim.recording() as inner:
            x.exp()
    x.neg()
    assert outer.ops["aten::neg"] == 1 and outer.ops["aten::exp"] == 1
    assert "aten::neg" not in inner.ops


def test_strict_turns_fallback_into_error(trnsim):
    with trnsim.strict(), pytest.raises(trnsim.UnsupportedOpError) as info:
        _upsample()
    assert info.value.op == "aten::upsample_bilinear2d"
    assert info.value.reason_kind is ReasonKind.UNSUPPORTED_OP
    _upsample()  # strict mode ends with the block


def test_errors_carry_what_classify_reads(trnsim):
    from sweeper.settings.errors import SweeperError

    with pytest.raises(trnsim.UnsupportedDtypeError) as info:
        torch.zeros(2, dtype=torch.float64, device="trnsim")
    err = info.value
    assert isinstance(err, SweeperError) and isinstance(err, RuntimeError)
    assert err.reason_kind is ReasonKind.UNSUPPORTED_DTYPE
    assert err.op == "aten::empty.memory_format"
    assert issubclass(trnsim.DynamicShapeError, trnsim.UnsupportedFeatureError)
    assert trnsim.DynamicShapeError.reason_kind is ReasonKind.DYNAMIC_SHAPE
    assert trnsim.LoweringError.reason_kind is ReasonKind.COMPILE_ERROR


def test_device_contract(trnsim):
    from sweeper.devices.base import Device, Recording, get_device

    dev = get_device("trnsim", profile=None, collect_all=False)
    assert isinstance(dev, Device)
    assert dev.torch_device == "trnsim" and dev.compile_backend == "trnsim"
    assert dev.available() == (True, "")
    dev.setup()
    dev.setup()  # idempotent
    info = dev.profile_info()
    assert info["name"] == "trnsim-2026.08" and len(info["hash"]) == 16
    dev.reset_peak_memory()
    with dev.recording() as rec:
        keep = torch.empty(1 << 18, device="trnsim")
        _upsample()
    assert isinstance(rec, Recording)
    assert rec.fallback_ops["aten::upsample_bilinear2d"] == 1
    assert dev.peak_memory_bytes() >= keep.numel() * 4
    dev.synchronize()
    dev.reset_between_models()


def test_collect_all_records_every_blocker_and_runs_on(trnsim):
    from sweeper.devices.base import get_device

    dev = get_device("trnsim", profile=None, collect_all=True)

    class Mixed(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.lin = torch.nn.Linear(4, 4)
            self.register_buffer("scale", torch.ones(4, dtype=torch.float64))

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            y = self.lin(x) * self.scale.float()
            return torch.linalg.svd(y.reshape(2, 2, 2)).S.sum() + torch.func.jvp(torch.sin, (y,), (y,))[1].sum()

    with dev.recording() as rec:
        model = Mixed().to("trnsim")
        with pytest.raises(trnsim.UnsupportedFeatureError):
            model(torch.randn(2, 4, device="trnsim"))
    kinds = {(b.kind, b.op) for b in rec.blockers}
    assert (ReasonKind.UNSUPPORTED_DTYPE, "aten::empty_strided") in kinds or \
        (ReasonKind.UNSUPPORTED_DTYPE, "aten::empty.memory_format") in kinds
    assert (ReasonKind.UNSUPPORTED_FEATURE, "aten::_make_dual") in kinds
    assert rec.fallback_ops["aten::_linalg_svd"] == 1
    assert all(isinstance(b, Reason) for b in rec.blockers)


def test_strict_with_collect_all_records_fallbacks_as_blockers(trnsim):
    with trnsim.strict(), trnsim.collect_all(), trnsim.recording() as rec:
        out = _upsample()
    assert out.shape == (1, 1, 8, 8)
    assert [(b.kind, b.op) for b in rec.blockers] == [(ReasonKind.UNSUPPORTED_OP, "aten::upsample_bilinear2d")]
    assert rec.fallback_ops == {"aten::upsample_bilinear2d": 1}


def test_integer_histc_runs_as_a_recorded_host_fallback(trnsim):
    # MoE routing in transformers counts experts with histc on integer ids off the CPU;
    # the host kernel takes floats only, so the simulator supplies the accelerator's form.
    ids = torch.tensor([0, 1, 1, 3], device="trnsim", dtype=torch.int32)
    with trnsim.recording() as seen:
        counts = torch.histc(ids, bins=4, min=0, max=3)
    assert counts.device.type == "trnsim" and counts.dtype == torch.int32
    assert counts.cpu().tolist() == [1, 2, 0, 1]
    assert seen.fallback_ops["aten::histc"] == 1
