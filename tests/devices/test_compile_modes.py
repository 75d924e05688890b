"""The compile stage compiles as a user does; whole-graph capture is an option.

A model with a data-dependent op (``nonzero``, ``masked_select``) compiles with Dynamo's
defaults: the op breaks the graph and runs eagerly on the device, and the record counts
the break with its cause. With ``whole_graph`` the op is captured into the one graph, the
compiler refuses it per the profile, and the refusal names the op.
"""

from __future__ import annotations

import pytest
import torch

from sweeper.checks import stages
from sweeper.checks.checker import check_model
from sweeper.checks.repro import repro_command
from sweeper.libraries.transformers import Built
from sweeper.records import ModelRef, Origin, ReasonKind, Status
from sweeper.settings.config import SweepConfig


class Branching(torch.nn.Module):
    """A linear layer whose forward branches on its data: no single graph holds it."""

    def __init__(self) -> None:
        super().__init__()
        self.linear = torch.nn.Linear(4, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.linear(x)
        return y.sum() * 2 if y.sum() > 0 else y.sum()


class Selective(torch.nn.Module):
    """A linear layer whose output keeps only its positive entries (data-dependent shape)."""

    def __init__(self) -> None:
        super().__init__()
        self.linear = torch.nn.Linear(4, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.linear(x)
        kept = y.masked_select(y > 0)
        return y.sum() + kept.sum() + torch.nonzero(y > 0).shape[0]


def _check(monkeypatch: pytest.MonkeyPatch, model: type = Selective, **cfg):
    def build(ref: ModelRef, _cfg: SweepConfig) -> Built:
        torch.manual_seed(0)
        return Built(model=model(), inputs={"x": torch.randn(3, 4)}, architecture="Selective",
                     model_type="selective", num_parameters=20)  # fmt: skip

    monkeypatch.setattr(stages, "build_model", build)
    settings = {"device": "trnsim", "executor": "inline", **cfg}
    return check_model(ModelRef(model_id="test/selective", rank=1), SweepConfig.of(**settings))


def test_a_data_dependent_op_breaks_the_graph_and_passes_by_default(trnsim, monkeypatch):
    record = _check(monkeypatch)
    assert record.status is Status.PASS, record.reason
    assert record.outcome.value == "pass"
    assert record.stages["compile"].status is Status.PASS
    assert record.graph_breaks >= 1
    causes = " ".join(record.graph_break_reasons)
    assert "aten::masked_select" in causes or "aten::nonzero" in causes, record.graph_break_reasons
    assert "capture_dynamic_output_shape_ops" not in causes  # a cause, not Dynamo's hint text
    assert "--whole-graph" not in record.repro


def _spy_on_compile(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, bool]]:
    """(device, whole_graph) of every compile stage run: the device's and its CPU control's."""
    from sweeper.checks import checker as check
    from sweeper.records import Stage

    seen: list[tuple[str, bool]] = []
    original = stages.compile_stage

    def spy(ctx: stages.StageContext) -> None:
        seen.append((ctx.cfg.device.spec, ctx.cfg.device.whole_graph))
        original(ctx)

    monkeypatch.setattr(stages, "compile_stage", spy)
    monkeypatch.setitem(check.STAGE_FUNCS, Stage.COMPILE, spy)
    return seen


def test_whole_graph_capture_fails_naming_the_op(trnsim, monkeypatch):
    seen = _spy_on_compile(monkeypatch)
    record = _check(monkeypatch, whole_graph=True)
    assert seen == [("trnsim", True)]  # a refusal the profile declares needs no CPU control
    compile_result = record.stages["compile"]
    assert compile_result.status is Status.FAIL
    assert compile_result.reason.kind in (ReasonKind.DYNAMIC_SHAPE, ReasonKind.UNSUPPORTED_OP, ReasonKind.COMPILE_ERROR)
    assert compile_result.reason.op in ("aten::masked_select", "aten::nonzero"), compile_result.reason
    assert record.outcome.value == "device" and record.reason.origin is Origin.DEVICE
    assert record.control is None
    assert record.stages["forward"].status is Status.PASS  # eager on the device is unaffected
    assert "--whole-graph" in record.repro


def test_a_model_no_single_graph_holds_is_the_models_under_whole_graph_and_passes_by_default(trnsim, monkeypatch):
    assert _check(monkeypatch, Branching).status is Status.PASS  # a graph break, as users compile
    seen = _spy_on_compile(monkeypatch)
    record = _check(monkeypatch, Branching, whole_graph=True)
    assert seen == [("trnsim", True), ("cpu", True)]  # the CPU control compiles as the device run did
    assert record.control["stage"] == "compile" and record.control["status"] == "fail"  # the CPU cannot either
    assert record.outcome.value == "model" and record.reason.origin is Origin.MODEL, record.reason


def test_whole_graph_is_part_of_the_checks_fingerprint_and_a_settings_file_can_ask_for_it(tmp_path):
    from sweeper.settings.config import build_config
    from sweeper.storage.fingerprint import NOT_OUTCOME

    assert "whole_graph" not in NOT_OUTCOME  # a setting that changes the outcome
    settings = tmp_path / "team.toml"
    settings.write_text("[device]\nwhole_graph = true\n")
    cfg = build_config({}, config_file=str(settings))
    assert cfg.device.whole_graph is True
    assert "--whole-graph" in repro_command(ModelRef(model_id="org/m", rank=1), cfg)


class MaskedAssign(torch.nn.Module):
    """``h[mask] = ...`` (Kosmos-2's image embeddings): the backward needs ``nonzero``, which
    AOT autograd cannot trace, so Dynamo runs the frame eagerly after a backend exception."""

    def __init__(self) -> None:
        super().__init__()
        self.linear = torch.nn.Linear(4, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.linear(x).clone()
        h[x[:, 0] > 0] = self.linear(x)[x[:, 0] > 0] * 2
        return h.sum()


def test_a_frame_the_backend_could_not_compile_counts_as_a_graph_break(trnsim, monkeypatch):
    record = _check(monkeypatch, MaskedAssign)
    assert record.status is Status.PASS, record.reason
    assert record.graph_breaks >= 1
    assert "Backend compiler exception (aten::nonzero)" in record.graph_break_reasons, record.graph_break_reasons
