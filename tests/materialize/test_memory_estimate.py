"""Memory bounded before it is spent: position tables shrink in tiny mode; what still does
not fit the worker's budget is a ``too_large`` record, refused before it is built."""

from __future__ import annotations

import time

from sweeper.checks.checker import check_model
from sweeper.libraries.transformers.build import build
from sweeper.records import ENVIRONMENT_KINDS, ModelRef, ReasonKind
from sweeper.settings.config import SweepConfig

# 2 layers, 64 wide: a few hundred thousand parameters, but causal masks of 40,000² per layer.
LONG_GPT_NEO = {
    "model_type": "gpt_neo", "hidden_size": 64, "num_layers": 2, "num_heads": 2,
    "attention_types": [[["global", "local"], 1]], "max_position_embeddings": 40_000,
    "vocab_size": 1000, "window_size": 256,
}


def _ref() -> ModelRef:
    return ModelRef(model_id="org/long-gpt-neo", rank=1, model_type="gpt_neo", config=dict(LONG_GPT_NEO),
                    source="catalog", architecture="GPTNeoForCausalLM")


def test_tiny_mode_shrinks_position_tables() -> None:
    built = build(_ref(), SweepConfig.of(stages=("load", "forward")))
    assert built.config.max_position_embeddings <= 2048
    buffers = sum(b.numel() * b.element_size() for b in built.model.buffers())
    assert buffers < 64 * 1024 * 1024  # not 2 × 40,000² bytes of causal mask


def test_what_does_not_fit_the_budget_is_too_large_before_it_is_built() -> None:
    cfg = SweepConfig.of(weights="random", stages=("load", "forward"), memory_limit_mb=1024)
    start = time.monotonic()
    record = check_model(_ref(), cfg)
    assert record.reason is not None and record.reason.kind == ReasonKind.TOO_LARGE, record.reason
    assert "estimated peak" in record.reason.message and "1,024 MiB" in record.reason.message
    assert ReasonKind.TOO_LARGE in ENVIRONMENT_KINDS and ReasonKind.TOO_LARGE.value == "too_large"
    assert time.monotonic() - start < 30  # refused on meta, not after allocating gigabytes
