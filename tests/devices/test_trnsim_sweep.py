"""trnsim inside the sweep: what one model's record says (through check_model)."""

from __future__ import annotations

import pytest

from sweeper.records import ReasonKind, Status

check = pytest.importorskip("sweeper.check")
resolve = pytest.importorskip("sweeper.resolve")


def _record(model: str, **overrides):
    from sweeper.config import build_config

    cfg = build_config({"device": "trnsim", "executor": "inline", **overrides})
    return check.check_model(resolve.resolve_model(model, cfg), cfg)


def test_gpt2_record_reports_untied_weights_and_the_profile(trnsim):
    record = _record("gpt2", stages="load,to_device,forward,backward")
    assert record.status is not Status.PASS
    assert record.reason.kind is ReasonKind.UNTIED_WEIGHTS
    assert record.versions["device_profile"].startswith("trnsim-2026.08@")
    assert record.fallback_ops == {}


def test_gpt2_with_retie_passes_eager_and_compiled(trnsim):
    record = _record("gpt2", retie_weights=True)
    assert record.status is Status.PASS, record.reason
    assert record.stages["compile"].status is Status.PASS
    assert record.max_abs_diff is not None and record.max_abs_diff < 1e-3


@pytest.mark.slow
def test_collect_all_lists_every_blocker_of_a_model(trnsim):
    record = _record("whisper", retie_weights=True, collect_all=True, stages="load,to_device,forward,backward,compile")
    assert record.status is not Status.PASS
    assert (ReasonKind.COMPILE_ERROR, "aten::convolution_backward") in {(b.kind, b.op) for b in record.blockers}
    assert any("convolution_backward" in p for p in record.compile_problems)
