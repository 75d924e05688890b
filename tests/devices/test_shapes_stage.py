"""The shapes stage: recompiles per shape on a static-shape device, one symbolic graph
where the backend takes it, a failure only at a longer length, and padding to buckets
judged against the CPU's own padded run."""

from __future__ import annotations

import pytest
import torch

from sweeper.checks import stages
from sweeper.checks.checker import check_model
from sweeper.libraries.built import Built
from sweeper.records import ModelRef, Status
from sweeper.settings.config import SweepConfig
from sweeper.sources.zoo import zoo_ref

STAGES = ("load", "to_device", "compile", "shapes")


class Tagger(torch.nn.Module):
    """Tags each token from its embedding and the masked mean of the sequence.

    ``fault``: ``"longer"`` interpolates bilinearly past 16 positions (an op trnsim's
    compiler refuses, met only at a longer length); ``"mask"`` ignores the attention mask
    (padding changes the real positions everywhere); ``"mask_on_device"`` ignores it on
    trnsim only.
    """

    def __init__(self, fault: str | None = None) -> None:
        super().__init__()
        self.fault = fault
        self.embed = torch.nn.Embedding(50, 8)
        self.head = torch.nn.Linear(8, 4)

    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
        h = self.embed(input_ids)
        if self.fault == "longer" and input_ids.shape[1] > 16:
            h = torch.nn.functional.interpolate(h.unsqueeze(1), size=h.shape[1:], mode="bilinear").squeeze(1)
        mask = attention_mask[..., None].to(h.dtype)
        ignore = self.fault == "mask" or (self.fault == "mask_on_device" and h.device.type == "trnsim")
        if ignore:
            mean = h.mean(dim=1, keepdim=True)
        else:
            mean = (h * mask).sum(dim=1, keepdim=True) / mask.sum(dim=1, keepdim=True)
        return self.head(h + mean)


def _check(monkeypatch: pytest.MonkeyPatch, fault: str | None = None, **settings) -> object:
    def build(ref: ModelRef, _cfg: SweepConfig) -> Built:
        torch.manual_seed(0)
        inputs = {"input_ids": torch.randint(1, 50, (2, 16)), "attention_mask": torch.ones(2, 16, dtype=torch.long)}
        return Built(model=Tagger(fault).eval(), inputs=inputs, architecture="Tagger", model_type="tagger",
                     num_parameters=236)

    monkeypatch.setattr(stages, "build_model", build)
    cfg = SweepConfig.of(**{"device": "trnsim", "executor": "inline", "stages": STAGES, **settings})
    return check_model(ModelRef(model_id=f"test/tagger-{fault}", rank=1), cfg)


def _dynamo_defaults():
    """Dynamo's automatic dynamic shapes on, as a cpu sweep's worker has them (a trnsim
    test in this process may have turned them off, as a static-shape profile does)."""
    import torch._dynamo

    return torch._dynamo.config.patch(automatic_dynamic_shapes=True)


def test_a_text_model_recompiles_for_each_new_shape_on_a_static_device_with_dynamos_reasons(trnsim):
    record = check_model(zoo_ref("bert", 1), SweepConfig.of(device="trnsim", stages=STAGES))
    assert record.stages["shapes"].status is Status.PASS, record.reason
    found = record.shapes
    assert [s["shape"] for s in found["shapes"]] == ["compile", "longer", "batch"]
    assert [s["sizes"]["input_ids"] for s in found["shapes"]] == [[2, 16], [2, 24], [3, 16]]
    # The compile stage's graph serves its own shape; each new shape compiles one more.
    assert [s["graphs"] for s in found["shapes"]] == [0, 1, 1]
    assert found["compiles"] == 2 and found["recompiles"] == 2
    longer, batch = (s["recompiles"][0] for s in found["shapes"][1:])
    assert (longer["input"], longer["dim"], longer["expected"], longer["actual"]) == ("input_ids", 1, 16, 24)
    assert (batch["input"], batch["dim"], batch["expected"], batch["actual"]) == ("input_ids", 0, 2, 3)
    assert "size mismatch" in longer["guard"]
    assert found["symbolic"]["status"] == "declared_static"
    assert found["verdict"] == "static" and found["workload_compiles"] == 8
    # The same answers as the CPU at every new shape (the compile stage compared its own).
    assert all(s["within"] for s in found["shapes"][1:]) and "within" not in found["shapes"][0]
    assert found["padding"]["status"] == "pass" and found["padding"]["output"] == "logits"


def test_a_backend_that_takes_symbolic_shapes_reuses_the_graph_dynamo_made_symbolic(trnsim, monkeypatch):
    record = _check(monkeypatch, device_profile="trnsim-next")
    assert record.status is Status.PASS, record.reason
    found = record.shapes
    # As a user's torch.compile asks it: the second length recompiles with the length
    # symbolic, a third length reuses that graph; no separate dynamic=True compile.
    assert [s["shape"] for s in found["shapes"]] == ["compile", "longer", "again", "batch"]
    longer, again = found["shapes"][1], found["shapes"][2]
    assert longer["graphs"] == 1 and longer["recompiles"][0]["input"] == "input_ids"
    assert again["graphs"] == 0 and again["sizes"]["input_ids"] == [2, 32]
    assert found["symbolic"]["status"] == "reused" and found["symbolic"]["second"] == "longer"
    assert found["verdict"] == "symbolic" and found["workload_compiles"] == 2


def test_the_cpu_with_dynamo_defaults_is_symbolic_too(monkeypatch):
    # Dynamo's default, as in a cpu sweep's worker (a trnsim test in this process set it off).
    with _dynamo_defaults():
        record = _check(monkeypatch, device="cpu", compile_backend="aot_eager")
    assert record.status is Status.PASS, record.reason
    assert record.shapes["verdict"] == "symbolic"
    assert record.shapes["symbolic"]["status"] == "reused"
    # Dynamo's defaults: the second length recompiles as a symbolic graph, which the new
    # batch size recompiles once more.
    assert record.shapes["compiles"] >= 2


def test_a_shapes_stage_past_its_limit_is_a_timeout_of_that_stage_alone(monkeypatch):
    """A stage that runs out of its own time keeps what the model earned: load through
    compile pass, the model passes, and the shapes stage says where it stopped."""
    import time

    from sweeper.checks import shapes

    class Crawling:
        """The compiled model, each call 5 s late (a recompile that takes too long)."""

        def __init__(self, inner):
            self.inner = inner

        def __call__(self, *args, **kwargs):
            time.sleep(5)
            return self.inner(*args, **kwargs)

    real = shapes._compiled_runs

    def slow(ctx, plan, *, compiled=None, **kwargs):
        return real(ctx, plan, compiled=None if compiled is None else Crawling(compiled), **kwargs)

    monkeypatch.setattr(shapes, "_compiled_runs", slow)
    with _dynamo_defaults():
        record = _check(monkeypatch, device="cpu", compile_backend="aot_eager", shapes_timeout=1.0)
    assert [record.stages[s].status for s in ("load", "to_device", "compile")] == [Status.PASS] * 3
    shaped = record.stages["shapes"]
    assert shaped.status is Status.TIMEOUT and shaped.reason.kind.value == "timeout"
    assert "--shapes-timeout 1s" in shaped.reason.message and shaped.seconds < 5
    assert record.status is Status.PASS and record.outcome.value == "pass" and record.blockers == []
    assert record.shapes["verdict"] == "timeout" and record.shapes["stopped_at"]["shape"] == "compile"


def test_the_shapes_stage_never_runs_past_what_is_left_of_the_models_timeout():
    import time

    from sweeper.checks.deadline import stage_limit

    now = time.perf_counter()
    assert stage_limit(120.0, model_timeout=None, model_started=now) == 120.0
    assert stage_limit(120.0, model_timeout=300.0, model_started=now) == 120.0
    # 200 s of a 300 s budget spent: 100 left, less the 30 s margin to settle the record.
    assert 69.0 < stage_limit(120.0, model_timeout=300.0, model_started=now - 200.0) <= 70.0
    assert stage_limit(120.0, model_timeout=300.0, model_started=now - 290.0) == 0.0


def test_a_model_that_breaks_only_at_a_longer_length_fails_the_stage_naming_the_op(trnsim, monkeypatch):
    record = _check(monkeypatch, fault="longer")
    assert record.stages["compile"].status is Status.PASS  # the compile stage's length runs
    assert record.stages["shapes"].status is Status.FAIL
    assert record.reason.stage == "shapes" and record.reason.op == "aten::upsample_bilinear2d", record.reason
    assert record.reason.origin.value == "device"
    assert record.shapes["verdict"] == "fails"
    assert record.shapes["failed_at"]["shape"] == "longer"
    assert record.shapes["failed_at"]["sizes"]["input_ids"] == [2, 24]


def test_a_masking_bug_of_the_model_fails_the_padding_check_as_the_models(trnsim, monkeypatch):
    record = _check(monkeypatch, fault="mask")
    padding = record.shapes["padding"]
    assert (padding["status"], padding["origin"], padding["output"]) == ("fail", "model", "output")
    assert padding["cpu_max_abs"] > 0 and (padding["bucket"], padding["real"]) == (16, 12)
    # The CPU pads the same way and gets the same gap: the device is not blamed.
    assert record.status is Status.PASS and record.stages["shapes"].status is Status.PASS


def test_padding_that_only_the_device_gets_wrong_is_the_devices(trnsim, monkeypatch):
    record = _check(monkeypatch, fault="mask_on_device")
    assert record.stages["shapes"].status is Status.FAIL
    assert record.reason.kind.value == "numerics" and record.reason.stage == "shapes"
    assert record.reason.origin.value == "device"
    assert "padding to a bucket of 16" in record.reason.message
    assert record.shapes["padding"]["origin"] == "device"
    assert record.control and record.control["stage"] == "shapes" and record.control["status"] == "pass"
