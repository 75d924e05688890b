"""A library import that changes Dynamo's settings for its process (gptqmodel raises the
recompile limit) changes them for its own models' checks, never for the next model's."""

from __future__ import annotations

import sys

import pytest
import torch

from sweeper.checks import stages
from sweeper.checks.checker import check_model
from sweeper.libraries import dynamo_settings
from sweeper.libraries.built import Built
from sweeper.records import ModelRef, Status
from sweeper.settings.config import SweepConfig


class Embedder(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.embed = torch.nn.Embedding(50, 8)
        self.head = torch.nn.Linear(8, 4)

    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
        mask = attention_mask[..., None].float()
        return self.head(self.embed(input_ids) * mask)


@pytest.fixture
def library_import(tmp_path, monkeypatch):
    """A library whose import raises Dynamo's recompile limit for the whole process, as
    gptqmodel's does; the test's own record of what library imports changed."""
    from torch._dynamo import config

    (tmp_path / "raises_the_limit.py").write_text(
        "import torch._dynamo\ntorch._dynamo.config.cache_size_limit = 128\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setattr(dynamo_settings, "_BEFORE_IMPORTS", {})
    with config.patch(recompile_limit=8):
        yield lambda: __import__("raises_the_limit")
    sys.modules.pop("raises_the_limit", None)


def _shapes_limit(monkeypatch: pytest.MonkeyPatch) -> int:
    def build(ref: ModelRef, _cfg: SweepConfig) -> Built:
        torch.manual_seed(0)
        inputs = {"input_ids": torch.randint(1, 50, (2, 16)), "attention_mask": torch.ones(2, 16, dtype=torch.long)}
        return Built(model=Embedder().eval(), inputs=inputs, architecture="Embedder", model_type="embedder",
                     num_parameters=436)

    monkeypatch.setattr(stages, "build_model", build)
    cfg = SweepConfig.of(device="cpu", compile_backend="aot_eager", executor="inline",
                         stages=("load", "to_device", "compile", "shapes"))
    record = check_model(ModelRef(model_id="test/embedder", rank=1), cfg)
    assert record.stages["shapes"].status is Status.PASS, record.reason
    return record.shapes["recompile_limit"]


def test_the_model_after_a_library_that_raised_the_recompile_limit_is_judged_under_torchs_own(
        library_import, monkeypatch):
    changed = dynamo_settings.changes_by(library_import)
    assert changed == {"recompile_limit": 128}
    assert _shapes_limit(monkeypatch) == 8
