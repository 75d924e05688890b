"""How much memory a model will need, estimated on ``meta`` before any of it is spent.

The parameter cap alone misses what grows with sequence and position tables: a gpt_neo
config with 361,616 parameters registers a causal-mask buffer of
``max_position_embeddings``² per layer and peaked at 6.3 GB. The estimate counts, on the
meta-device model (no memory used):

- parameters, three times (weights, gradients, the CPU reference's copy);
- every registered buffer (causal masks, position tables, rotary caches), in its dtype;
- activations of one forward and backward at the sweep's batch and sequence length:
  hidden states per layer and attention scores (batch × heads × seq²) per layer.

``check_fits`` raises ``MemoryBudgetError`` (reason ``too_large``, an environment outcome:
the machine, not the device, is too small) when the estimate exceeds the budget.
"""

from __future__ import annotations

import os
from typing import Any

import psutil

from sweeper.records import ReasonKind
from sweeper.settings.errors import SweeperError

MIB = 1024 * 1024
ACTIVATION_COPIES = 16  # tensors kept per layer and token for backward (MLP, norms, residuals)
HEADROOM = 1.5  # allocator slack, temporaries, the framework's own overhead
# A worker process's memory limit in MiB, in its environment (sweeper.executors.child).
WORKER_LIMIT_ENV = "SWEEPER_WORKER_MEMORY_MB"


class MemoryBudgetError(SweeperError):
    """The model's estimated peak memory exceeds what this worker may use."""

    reason_kind = ReasonKind.TOO_LARGE


def _int_attr(config: Any, names: tuple[str, ...], default: int) -> int:
    for name in names:
        value = getattr(config, name, None)
        if isinstance(value, int) and not isinstance(value, bool) and value > 0:
            return value
    return default


def estimate_bytes(model: Any, config: Any, *, batch: int, seq: int) -> int:
    """Estimated peak bytes to check ``model`` (built on meta) at ``batch`` × ``seq``."""
    params = sum(p.numel() * p.element_size() for p in model.parameters())
    buffers = sum(b.numel() * b.element_size() for b in model.buffers())
    text = getattr(config, "text_config", None) or config
    hidden = _int_attr(text, ("hidden_size", "d_model", "n_embd", "dim"), 256)
    layers = _int_attr(text, ("num_hidden_layers", "num_layers", "n_layer", "n_layers"), 1)
    heads = _int_attr(text, ("num_attention_heads", "n_head", "num_heads", "encoder_attention_heads"), 1)
    tokens = batch * seq
    activations = layers * (tokens * hidden * ACTIVATION_COPIES + batch * heads * seq * seq * 2) * 4
    return int((3 * params + buffers + activations) * HEADROOM)


def budget_bytes(cfg: Any) -> int:
    """What one model may use: the worker's limit (``WORKER_LIMIT_ENV``, set by the executor
    that started it), else ``--memory-limit-mb``, else 80% of what is available."""
    limit = os.environ.get(WORKER_LIMIT_ENV) or cfg.execution.memory_limit_mb
    if limit:
        return int(limit) * MIB
    return int(psutil.virtual_memory().available * 0.8)


def check_fits(model: Any, config: Any, cfg: Any) -> int:
    """Raise ``MemoryBudgetError`` when the estimate exceeds the budget; return the estimate."""
    need = estimate_bytes(model, config, batch=cfg.materialise.batch_size, seq=cfg.materialise.seq_len)
    budget = budget_bytes(cfg)
    if need > budget:
        raise MemoryBudgetError(
            f"estimated peak {need / MIB:,.0f} MiB (parameters, buffers such as causal masks, activations) "
            f"> {budget / MIB:,.0f} MiB this worker may use"
        )
    return need


def meta_model(cls: type, config: Any) -> Any:
    """The model built on the ``meta`` device: shapes and dtypes, no memory."""
    import torch

    from sweeper.libraries.transformers.models import _quiet

    with torch.device("meta"), _quiet():
        return cls._from_config(config)
