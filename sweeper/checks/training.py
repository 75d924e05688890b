"""Backward as users train: the model in train mode, dropout and stochastic depth made
deterministic, and everything a training step changes put back afterwards.

A user backpropagates in train mode. Paths that exist only there are checked as they are
met: cuDNN's RNN backward (which refuses eval mode), batch norm over the batch, layers
that a config switches off in eval. Dropout and stochastic depth would draw a different
mask on every device, so they are switched off: ``nn.Dropout`` modules (and timm's and
torchvision's drop-path modules) stay in eval mode, and float attributes that modules or
their configuration pass to functional dropout or stochastic depth (``attention_dropout``,
``drop_prob``, a config's ``layerdrop``...) read 0 for the step. A
random op left after that (dropout hard-wired on, sampled noise) is fed the CPU's draws
(``randomness``). Buffers a training step updates (batch norm's running statistics) and
every module's mode are restored on the way out, so the stages after it see the model as
it was.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

import torch

# Module classes whose forward draws (or skips a block at random) only in train mode.
_STOCHASTIC_CLASSES = ("Dropout", "DropPath", "StochasticDepth", "DropBlock", "AlphaDropout")
# Float attributes modules hand to functional dropout or stochastic depth.
_RATE_NAMES = ("dropout", "drop_prob", "drop_path", "drop_rate", "dropout_p", "attention_dropout", "drop_path_rate",
               "layerdrop", "layer_drop")


def _stochastic(module: torch.nn.Module) -> bool:
    name = type(module).__name__
    return isinstance(module, torch.nn.modules.dropout._DropoutNd) or any(c in name for c in _STOCHASTIC_CLASSES)


def _rate_attributes(module: torch.nn.Module) -> list[tuple[str, float]]:
    """(name, value) of the module's float attributes that set a dropout-like rate."""
    found = []
    for name, value in vars(module).items():
        if isinstance(value, float) and not isinstance(value, bool) and value > 0 and \
                any(part in name.lower() for part in _RATE_NAMES):
            found.append((name, value))
    return found


def _module_rate(module: torch.nn.Module) -> list[tuple[str, float]]:
    """A dropout module's own ``p``."""
    p = getattr(module, "p", None)
    return [("p", p)] if _stochastic(module) and isinstance(p, float) and p > 0 else []


def _configs(model: torch.nn.Module) -> list[Any]:
    """The distinct configuration objects the model's modules hold (``module.config``)."""
    found: dict[int, Any] = {}
    for module in model.modules():
        config = getattr(module, "config", None)
        if config is not None and not isinstance(config, (dict, torch.nn.Module)) and hasattr(config, "__dict__"):
            found.setdefault(id(config), config)
    return list(found.values())


@contextlib.contextmanager
def training_step(model: torch.nn.Module) -> Iterator[None]:
    """The model in train mode with dropout and stochastic depth off (see the module's
    docstring); modes, rates and buffers as they were afterwards."""
    modes = {m: m.training for m in model.modules()}
    buffers = {name: b.detach().clone() for name, b in model.named_buffers() if b is not None}
    rates: list[tuple[torch.nn.Module, str, float]] = []
    try:
        model.train()
        for module in model.modules():
            if _stochastic(module):
                module.eval()
            # (A parent in train mode may pass its Dropout child's ``p`` to functional
            # dropout or attention itself: the rate goes to 0 too.)
            for name, value in _rate_attributes(module) + _module_rate(module):
                rates.append((module, name, value))
                object.__setattr__(module, name, 0.0)
        for config in _configs(model):  # rates read from the config at each forward (layerdrop)
            for name, value in _rate_attributes(config):
                rates.append((config, name, value))
                object.__setattr__(config, name, 0.0)
        yield
    finally:
        for module, name, value in rates:
            object.__setattr__(module, name, value)
        for module, mode in modes.items():
            module.training = mode
        _restore_buffers(model, buffers)


def _restore_buffers(model: torch.nn.Module, saved: dict[str, torch.Tensor]) -> None:
    """Put back what a training step wrote into buffers (running statistics, counters)."""
    with torch.no_grad():
        for name, buffer in model.named_buffers():
            old = saved.get(name)
            if old is not None and buffer is not None and buffer.shape == old.shape and buffer.dtype == old.dtype:
                buffer.copy_(old.to(buffer.device))


def mode_context(mode: str, model: torch.nn.Module) -> Any:
    """``training_step`` for ``train``; for ``eval`` the model in eval mode as it is."""
    if mode == "train":
        return training_step(model)
    model.eval()
    return contextlib.nullcontext()
