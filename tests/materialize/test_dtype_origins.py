"""A model whose own code fails in bfloat16 (a float32 parameter it creates beside bfloat16
weights: XLNet's attention projections, DeBERTa's q/v biases) fails for a user who loads
it with ``dtype=torch.bfloat16`` too: the model's, not the harness's, and not a config."""

from __future__ import annotations

import pytest

from sweeper.checks.checker import check_model
from sweeper.libraries.transformers import materialize
from sweeper.records import ModelRef, Origin, Status
from sweeper.settings.config import SweepConfig


def _ref(model_type: str) -> ModelRef:
    return ModelRef(model_id=f"zoo/{model_type}", rank=1, pipeline_tag="fill-mask", library_name="transformers",
                    model_type=model_type, source="zoo")


def test_a_model_that_mixes_dtypes_in_bfloat16_only_is_the_models():
    pytest.importorskip("sweeper.devices.trnsim", exc_type=ImportError)  # says which torch, beside an untested one
    built = materialize(_ref("xlnet"), SweepConfig.of(dtype="bfloat16"))
    assert "in bfloat16 only" in built.notes["upstream_control"]
    cfg = SweepConfig.of(dtype="bfloat16", device="trnsim", executor="inline", stages=("load", "to_device", "forward"))
    record = check_model(_ref("xlnet"), cfg)
    assert record.status is Status.FAIL and record.reason.stage in ("load", "forward")
    assert record.reason.origin is Origin.MODEL, record.reason


def test_the_same_model_in_float32_runs_without_an_upstream_note():
    built = materialize(_ref("xlnet"), SweepConfig())
    assert "upstream_control" not in built.notes
    assert built.model(**built.inputs)[0].isfinite().all()
