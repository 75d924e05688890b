"""Test-only check functions: models that pass, segfault, abort, hang, eat memory, raise, patch.

``fault_check`` picks the behaviour from the model id (``fault/segfault-3`` segfaults), so
one sweep can mix good and bad models. Importable by worker processes and Ray workers
(the executors put the driver's ``sys.path`` on theirs).
"""

from __future__ import annotations

import builtins
import ctypes
import os
import time
from typing import Any

from sweeper.executors import progress
from sweeper.records import ModelRecord, ModelRef, Status, base_record

_HOLD: list[bytes] = []


def ok_check(ref: ModelRef, cfg: Any) -> ModelRecord:
    """A passing model; notes say which process ran it."""
    record = base_record(ref, sweep_id="t", device=cfg.device, status=Status.PASS)
    record.notes["pid"] = os.getpid()
    return record


def trivial_check(ref: ModelRef, cfg: Any) -> ModelRecord:
    """The cheapest record possible (scheduling tests)."""
    return ModelRecord(sweep_id="t", model_id=ref.model_id, key=ref.key, device=cfg.device, status=Status.PASS, rank=ref.rank)


def _segfault() -> None:
    ctypes.string_at(0)


def _hang() -> None:
    time.sleep(10_000)


def _eat_memory() -> None:
    while True:  # bytes(n * b"x") touches every page, so RSS really grows
        _HOLD.append(b"x" * (64 * 1024 * 1024))
        time.sleep(0.01)


def _raise() -> None:
    raise RuntimeError("model exploded on purpose")


def _patch() -> None:
    builtins.print = lambda *a, **k: None  # a model's monkey-patch leaking into the process


def _torch_globals() -> None:
    import torch

    torch.set_default_dtype(torch.float64)
    torch.set_grad_enabled(False)
    torch.set_num_threads(3)


def _kill_parent(ref: ModelRef, cfg: Any) -> None:
    """Lose the Ray worker under this model: an infrastructure fault, not the model's.

    ``fault/killparent-once-N`` does it on the first attempt only (a flag file in
    ``cfg.extra["marker_dir"]`` remembers); ``fault/killparent-always-N`` on every attempt.
    """
    flag = os.path.join(cfg.extra["marker_dir"], ref.model_id.replace("/", "_"))
    if "-once-" in ref.model_id and os.path.exists(flag):
        return
    open(flag, "w").close()
    os.kill(os.getppid(), 9)
    time.sleep(30)


FAULTS = {
    "segfault": _segfault,
    "abort": os.abort,
    "hang": _hang,
    "oom": _eat_memory,
    "raise": _raise,
    "patch": _patch,
    "torchglobals": _torch_globals,
    "exit": lambda: os._exit(3),
}


def fault_check(ref: ModelRef, cfg: Any) -> ModelRecord:
    """Behave as the model id says (``fault/<kind>-N``); other ids pass."""
    name = ref.model_id.split("/", 1)[-1].split("-", 1)[0]
    if name == "killparent":
        _kill_parent(ref, cfg)
    elif ref.model_id.startswith("fault/") and name in FAULTS:
        progress.mark(stage="forward")
        progress.mark(op=f"aten::{name}")
        FAULTS[name]()
    record = ok_check(ref, cfg)
    torch = __import__("sys").modules.get("torch")
    if torch is not None:
        record.notes["torch"] = {
            "dtype": str(torch.get_default_dtype()),
            "grad": torch.is_grad_enabled(),
            "threads": torch.get_num_threads(),
        }
    return record


def slow_check(ref: ModelRef, cfg: Any) -> ModelRecord:
    """A model that takes a little while (resume tests kill the driver mid-sweep)."""
    time.sleep(0.1)
    return ok_check(ref, cfg)


def refs(*names: str) -> list[ModelRef]:
    """ModelRefs for ids, ranked in order."""
    return [ModelRef(model_id=n, rank=i + 1) for i, n in enumerate(names)]
