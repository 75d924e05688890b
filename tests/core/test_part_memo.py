"""A component a checker has checked before (the same class, config, weights, inputs and
settings) is answered from its record in a later pipeline; anything different runs."""

from __future__ import annotations

import pytest
import torch

from sweeper.checks import stages
from sweeper.checks.checker import Checker, check_model
from sweeper.libraries.built import Built
from sweeper.records import ModelRef, Status
from sweeper.settings.config import SweepConfig


class Part(torch.nn.Module):
    def __init__(self, width: int, *, seed: int = 0) -> None:
        super().__init__()
        torch.manual_seed(seed)
        self.linear = torch.nn.Linear(width, width)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.linear(x).tanh()


def _pipeline(parts: dict[str, Part]) -> Built:
    built = {name: Built(model=m, inputs={"x": torch.linspace(-1, 1, 2 * m.linear.in_features).reshape(2, -1)},
                         architecture=f"Part{m.linear.in_features}", model_type="part", num_parameters=1)
             for name, m in parts.items()}
    return Built(model=torch.nn.ModuleDict(parts), inputs={}, architecture="+".join(b.architecture for b in built.values()),
                 model_type="pipeline", num_parameters=len(parts), components=built)


PIPELINES = {
    "org/a": lambda: {"vae": Part(4), "text_encoder": Part(3)},
    "org/b": lambda: {"vae": Part(4), "text_encoder_2": Part(5)},  # a's VAE: same class, weights, inputs
    "org/c": lambda: {"vae": Part(4, seed=1)},  # a VAE of other weights
}


@pytest.fixture
def pipelines(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(stages, "build_model", lambda ref, cfg: _pipeline(PIPELINES[ref.model_id]()))


def _cfg() -> SweepConfig:
    return SweepConfig.of(device="cpu", compile_backend="aot_eager", executor="inline")


def test_a_component_checked_before_is_answered_from_its_record(pipelines):
    checker = Checker.for_settings(_cfg())
    first = checker.check(ModelRef("org/a", 1))
    second = checker.check(ModelRef("org/b", 2))
    assert first.status is Status.PASS and second.status is Status.PASS, (first.reason, second.reason)
    assert "components_reused_from" not in first.notes
    assert second.notes["components_reused_from"] == {"vae": "org/a"}
    assert second.notes["component_stages"]["vae"] == first.notes["component_stages"]["vae"]
    assert list(second.notes["component_stages"]) == ["vae", "text_encoder_2"]  # the new one ran
    assert second.stages["compile"].status is Status.PASS


def test_a_component_of_other_weights_runs_and_a_one_off_check_keeps_nothing(pipelines):
    checker = Checker.for_settings(_cfg())
    checker.check(ModelRef("org/a", 1))
    other = checker.check(ModelRef("org/c", 3))
    assert "components_reused_from" not in other.notes
    check_model(ModelRef("org/a", 1), _cfg())
    again = check_model(ModelRef("org/b", 2), _cfg())
    assert "components_reused_from" not in again.notes
