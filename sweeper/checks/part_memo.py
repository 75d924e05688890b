"""Components a worker has checked before, answered again from their record.

Pipelines share components: the same tiny VAE, CLIP text encoder or T5 encoder sits in
most diffusers pipelines (ten of the top 1,000's pipelines hold one identical VAE, 7-8 s of
checks each). A component is keyed by everything its check reads: its class, its config,
the bytes of every parameter and buffer, the bytes of its inputs, and the settings of the
check. Two components with one key run the same computation on the same device under the
same settings, so the second gets a copy of the first's record (its stages, blockers,
numerics, control) and its pipeline's record says which model it was taken from.

Kept by the worker's ``Checker`` (an LRU of ``SIZE`` records): one sweep's settings and
device, never shared between processes; a one-off ``check_model`` keeps nothing.
"""

from __future__ import annotations

import copy
import dataclasses
import hashlib
from collections import OrderedDict
from typing import Any

import torch

from sweeper.libraries.built import Built
from sweeper.records import ModelRecord, Origin
from sweeper.settings.config import SweepConfig

SIZE = 64


def part_key(part: Built, cfg: SweepConfig, *, control: bool) -> str | None:
    """The key of ``part``'s check (None when something in it cannot be hashed)."""
    digest = hashlib.sha256()
    model = part.model
    try:
        digest.update(f"{type(model).__module__}.{type(model).__qualname__}|{part.architecture}|".encode())
        digest.update(repr((cfg.device, cfg.check, cfg.materialise, control, part.has_labels)).encode())
        config = getattr(model, "config", None)
        digest.update(repr(sorted(dict(config).items()) if isinstance(config, dict) else config).encode())
        for name, tensor in model.state_dict(keep_vars=False).items():
            digest.update(name.encode())
            _tensor(digest, tensor)
        _value(digest, part.inputs)
    except (TypeError, RuntimeError, ValueError):  # an input or weight that cannot be read as bytes
        return None
    return digest.hexdigest()


def _tensor(digest: Any, tensor: torch.Tensor) -> None:
    if tensor.device.type != "cpu" or tensor.layout is not torch.strided:
        raise TypeError("only dense CPU tensors are hashed")
    digest.update(f"{tensor.dtype}{tuple(tensor.shape)}{tensor.requires_grad}".encode())
    flat = tensor.detach().contiguous().reshape(-1)
    digest.update(flat.view(torch.uint8).numpy().tobytes() if flat.numel() else b"")


def _value(digest: Any, value: Any) -> None:
    if isinstance(value, torch.Tensor):
        _tensor(digest, value)
    elif isinstance(value, dict):
        for key in sorted(value, key=str):
            digest.update(f"{key}:".encode())
            _value(digest, value[key])
    elif isinstance(value, (list, tuple)):
        digest.update(f"{type(value).__name__}{len(value)}".encode())
        for item in value:
            _value(digest, item)
    elif value is None or isinstance(value, (bool, int, float, str)):
        digest.update(repr(value).encode())
    else:
        raise TypeError(f"cannot hash an input of type {type(value).__name__}")


class PartMemo:
    """The component records one checker (one worker's) has made, by ``part_key``."""

    def __init__(self, size: int = SIZE) -> None:
        self.size = size
        self._records: OrderedDict[str, tuple[str, ModelRecord]] = OrderedDict()

    def recall(self, key: str | None) -> tuple[str, ModelRecord] | None:
        """The model whose component had ``key`` and a copy of that component's record
        (its stages' seconds zero: the outcome is the first check's, no time was spent)."""
        if key is None or key not in self._records:
            return None
        self._records.move_to_end(key)
        model_id, record = self._records[key]
        again = copy.deepcopy(record)
        again.stages = {name: dataclasses.replace(result, seconds=0.0) for name, result in again.stages.items()}
        again.seconds = 0.0
        return model_id, again

    def keep(self, key: str | None, model_id: str, record: ModelRecord) -> None:
        """Keep ``record`` (``model_id``'s component) for later components with ``key``;
        not a record with a harness blocker (the harness's fault may not repeat)."""
        if key is None or any(reason.origin is Origin.HARNESS for reason in record.blockers):
            return
        self._records[key] = (model_id, copy.deepcopy(record))
        while len(self._records) > self.size:
            self._records.popitem(last=False)
