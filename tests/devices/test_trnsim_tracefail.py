"""A line of model code AOT autograd cannot trace fails at once in the frames Dynamo tries
after it (``trnsim.tracefail``): the record is the same, the repeated tracing is gone."""

from __future__ import annotations

import pytest
import torch

from sweeper.checks import stages
from sweeper.checks.checker import check_model
from sweeper.devices.trnsim import phases, tracefail
from sweeper.libraries.transformers import Built
from sweeper.records import ModelRecord, ModelRef, Status
from sweeper.settings.config import SweepConfig


class Embed(torch.nn.Module):
    """Scatters projected features into the embeddings under a boolean mask (Kosmos-2's
    ``inputs_embeds[mask] = image_embeds``): its backward needs ``aten.nonzero``."""

    def __init__(self) -> None:
        super().__init__()
        self.tokens = torch.nn.Linear(4, 4)
        self.image = torch.nn.Linear(4, 4)

    def forward(self, x: torch.Tensor, feats: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        h = self.tokens(x)
        h[mask] = self.image(feats)  # as many rows as the mask has True
        return h


class Middle(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.embed = Embed()
        self.head = torch.nn.Linear(4, 4)

    def forward(self, x: torch.Tensor, feats: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        return self.head(self.embed(x, feats, mask)).relu()


class Outer(torch.nn.Module):
    """Two levels of frames around the masked assignment, as a model's heads and towers are."""

    def __init__(self) -> None:
        super().__init__()
        self.middle = Middle()
        self.out = torch.nn.Linear(4, 2)

    def forward(self, x: torch.Tensor, feats: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        return self.out(self.middle(x, feats, mask)).sum()


def _inputs() -> dict[str, torch.Tensor]:
    torch.manual_seed(0)
    return {"x": torch.randn(3, 4), "feats": torch.randn(2, 4), "mask": torch.tensor([True, False, True])}


def _check(monkeypatch: pytest.MonkeyPatch) -> tuple[ModelRecord, int]:
    def build(ref: ModelRef, _cfg: SweepConfig) -> Built:
        inputs = _inputs()
        return Built(model=Outer(), inputs=inputs, architecture="Outer", model_type="outer", num_parameters=60)

    monkeypatch.setattr(stages, "build_model", build)
    tracefail.forget()
    phases.reset()
    record = check_model(ModelRef(model_id="test/outer", rank=1), SweepConfig.of(device="trnsim", executor="inline"))
    return record, phases.snapshot()["aot"].count


def test_frames_around_an_untraceable_line_fail_without_tracing_it_again(trnsim, monkeypatch):
    record, traced = _check(monkeypatch)
    with monkeypatch.context() as m:  # as before: every frame traced through AOT autograd
        m.setattr(tracefail, "refuse_known", lambda gm, inputs: None)
        torch._dynamo.reset()
        before, traced_before = _check(monkeypatch)
    assert before.status is Status.PASS and record.status is Status.PASS, (before.reason, record.reason)
    assert "Backend compiler exception (aten::nonzero)" in record.graph_break_reasons
    assert (record.graph_breaks, record.graph_break_reasons) == (before.graph_breaks, before.graph_break_reasons)
    assert record.numerics == before.numerics
    assert traced < traced_before, (traced, traced_before)


def test_a_line_that_failed_in_the_backward_fails_again_only_where_a_gradient_is_traced(trnsim):
    model, inputs = Outer(), _inputs()
    tracefail.forget()
    torch.compile(model, backend="trnsim")(**inputs).backward()  # remembers the masked assignment's line
    graphs = []

    def capture(gm: torch.fx.GraphModule, inputs: list) -> object:
        graphs.append((gm, list(inputs)))
        return gm.forward

    torch._dynamo.reset()
    torch.compile(model.middle.embed, backend=capture)(**inputs)
    with pytest.raises(tracefail.fallback_exceptions()):
        for gm, inputs in graphs:
            tracefail.refuse_known(gm, inputs)
    with torch.no_grad():  # an inference graph traces no backward: it is compiled as before
        for gm, inputs in graphs:
            tracefail.refuse_known(gm, inputs)
    tracefail.forget()
    for gm, inputs in graphs:  # forgotten between models
        tracefail.refuse_known(gm, inputs)
