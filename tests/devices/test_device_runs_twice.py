"""The device run twice: a trnsim kernel planted to add noise on each call is told apart
from a numerics gap (``device_nondeterministic``), and the report counts the outcome."""

from __future__ import annotations

import warnings
from collections.abc import Iterator
from pathlib import Path

import pytest
import torch

from sweeper.records import Outcome, ReasonKind, Status

STAGES = "load,to_device,forward,backward"


def _check(model: str = "bert"):
    from sweeper.checks.checker import check_model
    from sweeper.settings.config import build_config
    from sweeper.sources.resolve import resolve_model

    cfg = build_config({"device": "trnsim", "executor": "inline", "stages": STAGES})
    return check_model(resolve_model(model, cfg), cfg)


@pytest.fixture
def noisy_gelu(trnsim) -> Iterator[dict[str, float]]:
    """trnsim's ``aten::gelu`` adding Gaussian noise of ``scale`` on each call, from a
    generator no seed resets (each call draws anew, as an unstable kernel would)."""
    generator = torch.Generator().manual_seed(1234)
    setting = {"scale": 1.0}

    def kernel(x: torch.Tensor, approximate: str = "none") -> torch.Tensor:
        out = torch.ops.aten.gelu(x.to("cpu"), approximate=approximate)
        return (out + torch.randn(out.shape, generator=generator) * setting["scale"]).to(x.device)

    lib = torch.library.Library("aten", "IMPL")
    with warnings.catch_warnings():  # "Overriding a previously registered kernel": the plant
        warnings.simplefilter("ignore")
        lib.impl("gelu", kernel, "PrivateUse1")
    yield setting
    lib._destroy()


def test_a_kernel_that_adds_noise_on_each_call_is_nondeterministic_not_a_numerics_failure(noisy_gelu) -> None:
    record = _check()
    assert record.status is Status.FAIL
    assert record.reason.kind is ReasonKind.DEVICE_NONDETERMINISTIC, record.reason
    assert record.outcome is Outcome.NONDETERMINISTIC
    assert ReasonKind.NUMERICS not in {b.kind for b in record.blockers}
    found = record.numerics["device_nondeterministic"]["forward"]
    assert found["device_max_abs"] > 0.01 and found["cpu_max_abs"] == 0.0 and found["within_tolerance"] is False
    assert "two runs of the forward" in record.reason.message


def test_a_small_run_to_run_spread_is_a_finding_with_its_size_and_the_model_passes(noisy_gelu) -> None:
    noisy_gelu["scale"] = 1e-7
    record = _check()
    assert record.status is Status.PASS, record.reason
    found = record.numerics["device_nondeterministic"]
    assert 0 < found["forward"]["device_max_abs"] < 1e-4 and found["forward"]["within_tolerance"] is True
    assert found["backward"]["tensor"] == "gradient"


def test_a_deterministic_device_has_a_zero_spread_and_no_finding(trnsim) -> None:
    record = _check()
    assert record.status is Status.PASS, record.reason
    assert record.numerics["device_runs"]["forward"]["max_abs"] == 0.0
    assert record.numerics["device_runs"]["backward"]["max_abs"] == 0.0
    assert "device_nondeterministic" not in record.numerics


def test_a_device_gap_within_its_own_spread_is_judged_against_it() -> None:
    from sweeper.checks import device_runs, selfnoise
    from sweeper.checks.numerics import Diff

    numerics = {"device_nondeterministic": {"forward": {"device_max_abs": 0.01, "device_max_rel": 0.001}}}
    cpu = Diff(1e-6, 1e-7, True)
    larger = device_runs.larger(cpu, numerics, "forward")
    assert larger is not None and larger.max_abs == 0.01
    assert selfnoise.within_noise(Diff(0.02, 0.002, False), larger) and not selfnoise.within_noise(Diff(0.02, 0.002, False), cpu)
    assert device_runs.larger(cpu, {}, "forward") is cpu


def test_the_report_counts_the_outcome_of_its_own(tmp_path: Path) -> None:
    import sys

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "report"))
    from report_factory import reason, record, write_sweep

    from sweeper.report.commands import write_report

    folder = write_sweep(tmp_path / "run", [
        record("a/ok", 1, 100),
        record("a/flaky", 2, 50, "fail", fail_at="forward", blockers=[reason("device_nondeterministic")]),
    ])  # fmt: skip
    text = write_report(folder).read_text()
    assert "| device nondeterministic | 1 |" in text
    assert "**Device pass rate: 100.0%**" in text  # not judged: out of the device pass rate, as a lowering-tool finding
