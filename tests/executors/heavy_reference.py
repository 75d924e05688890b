"""A real ``Checker`` whose every model is ``Heavy``: one parameter, so its CPU reference
(output and gradients, each the parameter's size) is large next to what the device stages
need of their own. Its own module (it imports torch): worker processes unpickle the
checker from here."""

from __future__ import annotations

from typing import Any

import torch

from sweeper.checks import stages
from sweeper.checks.checker import Checker
from sweeper.libraries.built import Built
from sweeper.records import ModelRef

ELEMENTS = 48 * 1024 * 1024  # 192 MiB of float32 per copy


class Heavy(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.w = torch.nn.Parameter(torch.full((ELEMENTS,), 0.5))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.tanh(self.w * x)


def build(ref: ModelRef, cfg: Any) -> Built:
    return Built(model=Heavy(), inputs={"x": torch.ones(1)}, architecture="Heavy", model_type="heavy",
                 num_parameters=ELEMENTS)


class HeavyChecker(Checker):
    """``Checker`` as a sweep ships it to a worker, building ``Heavy`` for every model."""

    def setup(self) -> Checker:
        stages.build_model = build  # in the worker process only
        return super().setup()
