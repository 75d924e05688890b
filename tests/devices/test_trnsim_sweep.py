"""trnsim inside the sweep: what one model's record says (through check_model)."""

from __future__ import annotations

import pytest

from sweeper.records import ReasonKind, Status

check = pytest.importorskip("sweeper.checks.checker")
resolve = pytest.importorskip("sweeper.sources.resolve")


def _record(model: str, **overrides):
    from sweeper.settings.config import build_config

    cfg = build_config({"device": "trnsim", "executor": "inline", **overrides})
    return check.check_model(resolve.resolve_model(model, cfg), cfg)


def test_gpt2_record_reports_untied_weights_on_a_backend_without_identity(trnsim, tmp_path):
    from trnsim_helpers import profile_without_parameter_identity

    record = _record("gpt2", stages="load,to_device,forward,backward",
                     device_profile=str(profile_without_parameter_identity(tmp_path)))
    assert record.status is not Status.PASS
    assert record.reason.kind is ReasonKind.UNTIED_WEIGHTS
    assert record.versions["device_profile"].startswith("trnsim-2026.08@")
    assert record.fallback_ops == {}


def test_gpt2_keeps_its_ties_on_the_default_profile(trnsim):
    from sweeper.devices.trnsim.lowering import tool_version

    record = _record("gpt2", stages="load,to_device,forward,backward")
    assert record.status is Status.PASS, record.reason
    # The lowering tool decides trnsim's compile verdicts: every record names its version.
    assert record.versions["torch-mlir"] == tool_version()
    assert ReasonKind.UNTIED_WEIGHTS not in {b.kind for b in record.blockers}


def test_gpt2_with_retie_passes_eager_and_compiled(trnsim):
    # Its generation is another matter (the static cache's index_copy: test_generate_stage).
    record = _record("gpt2", retie_weights=True, stages="load,to_device,forward,backward,compile,shapes")
    assert record.status is Status.PASS, record.reason
    assert record.stages["compile"].status is Status.PASS
    assert record.max_abs_diff is not None and record.max_abs_diff < 1e-3


@pytest.mark.slow
def test_collect_all_lists_every_blocker_of_a_model(trnsim, tmp_path):
    from trnsim_helpers import profile_without_parameter_identity

    record = _record("fnet", collect_all=True, device_profile=str(profile_without_parameter_identity(tmp_path)))
    assert record.status is not Status.PASS
    kinds = {b.kind for b in record.blockers}
    assert {ReasonKind.UNTIED_WEIGHTS, ReasonKind.UNSUPPORTED_DTYPE} <= kinds, record.blockers
