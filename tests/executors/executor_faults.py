"""Test-only check functions (models that pass, segfault, abort, hang, eat memory, raise,
patch) and the helpers the executor tests share.

``fault_check`` picks the behaviour from the model id (``fault/segfault-3`` segfaults), so
one sweep can mix good and bad models. Importable by worker processes and Ray workers
(the executors put the driver's ``sys.path`` on theirs).
"""

from __future__ import annotations

import builtins
import ctypes
import os
import sys
import time
from typing import Any

from sweeper.executors import breadcrumbs
from sweeper.records import ModelRecord, ModelRef, Reason, ReasonKind, StageResult, Status, base_record

_HOLD: list[bytes] = []


def ok_check(ref: ModelRef, cfg: Any) -> ModelRecord:
    """A passing model; notes say which process ran it."""
    record = base_record(ref, sweep_id="t", device=cfg.device.spec, status=Status.PASS)
    record.notes["pid"] = os.getpid()
    return record


def trivial_check(ref: ModelRef, cfg: Any) -> ModelRecord:
    """The cheapest record possible (scheduling tests)."""
    return ModelRecord(sweep_id="t", model_id=ref.model_id, key=ref.key, device=cfg.device.spec, status=Status.PASS, rank=ref.rank)


def _segfault() -> None:
    ctypes.string_at(0)


def _abort() -> None:
    """What a C++ exception escaping into the interpreter looks like."""
    print("terminate called after throwing an instance of 'c10::Error'", file=sys.stderr, flush=True)
    os.abort()


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


def _kill_parent(ref: ModelRef, marker_dir: str) -> None:
    """Lose the Ray worker under this model: an infrastructure fault, not the model's.

    ``fault/killparent-once-N`` does it on the first attempt only (a flag file in
    ``marker_dir`` remembers); ``fault/killparent-always-N`` on every attempt.
    """
    flag = os.path.join(marker_dir, ref.model_id.replace("/", "_"))
    if "-once-" in ref.model_id and os.path.exists(flag):
        return
    open(flag, "w").close()
    os.kill(os.getppid(), 9)
    time.sleep(30)


def _register_device() -> None:
    import torch

    torch.utils.rename_privateuse1_backend("modeldev")  # a model registering its own device


FAULTS = {
    "segfault": _segfault,
    "abort": _abort,
    "hang": _hang,
    "oom": _eat_memory,
    "raise": _raise,
    "patch": _patch,
    "torchglobals": _torch_globals,
    "registerdevice": _register_device,
    "exit": lambda: os._exit(3),
    "sigkill": lambda: os.kill(os.getpid(), 9),  # what the kernel's OOM killer does
}


def _hang_in_shapes(ref: ModelRef, cfg: Any, *, earlier_blocker: bool) -> None:
    """Earn load through compile (each a pass, or the forward a failure), hand that over as
    the checker does before a stage with a limit of its own, then hang in the shapes stage."""
    earned = ok_check(ref, cfg)
    for stage in ("load", "to_device", "forward", "backward", "compile"):
        earned.stages[stage] = StageResult(Status.PASS, 0.5)
    earned.architecture, earned.notes["earned"] = "Tagger", True
    if earlier_blocker:
        reason = Reason(ReasonKind.NUMERICS, message="max |device - cpu| too large", stage="forward")
        earned.stages["forward"] = StageResult(Status.FAIL, 0.5, reason)
        earned.blockers, earned.reason, earned.status = [reason], reason, Status.FAIL
    earned.seconds = 2.5
    breadcrumbs.earned(earned)
    breadcrumbs.mark(stage="shapes")
    time.sleep(10_000)


def fault_check(ref: ModelRef, cfg: Any, *, marker_dir: str | None = None) -> ModelRecord:
    """Behave as the model id says (``fault/<kind>-N``); other ids pass. ``killparent``
    models need ``marker_dir`` (bind it: ``functools.partial(fault_check, marker_dir=...)``)."""
    name = ref.model_id.split("/", 1)[-1].split("-", 1)[0]
    if name == "killparent":
        assert marker_dir is not None, "killparent faults need a marker_dir"
        _kill_parent(ref, marker_dir)
    elif name in ("hangshapes", "hangshapesafterfail"):
        _hang_in_shapes(ref, cfg, earlier_blocker=name == "hangshapesafterfail")
    elif ref.model_id.startswith("fault/") and name in FAULTS:
        breadcrumbs.mark(stage="forward")
        breadcrumbs.mark(op=f"aten::{name}")
        FAULTS[name]()
    record = ok_check(ref, cfg)
    torch = sys.modules.get("torch")
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


def collect(executor: Any, refs_: list[ModelRef], cfg: Any, check: Any) -> list[ModelRecord]:
    """Run ``executor`` and return the records in the order ``on_record`` got them."""
    got: list[ModelRecord] = []
    try:
        executor.run(iter(refs_), cfg, check=check, on_record=got.append)
    finally:
        executor.close()
    return got


FAULTY = (
    "fault/segfault-1", "fault/abort-1", "fault/hang-1", "fault/oom-1", "fault/raise-1", "fault/exit-1",
    "fault/sigkill-1",
)


def check_fault_records(got: dict[str, ModelRecord]) -> None:
    """The records the fault models must produce, whichever executor ran them."""
    seg = got["fault/segfault-1"]
    assert seg.status == Status.CRASH and seg.reason is not None and seg.reason.kind == ReasonKind.CRASH
    assert "SIGSEGV" in seg.reason.message and "in stage forward" in seg.reason.message
    assert seg.reason.op == "aten::segfault" and seg.notes["stage"] == "forward"
    assert seg.stages["forward"].status == Status.CRASH
    aborted = got["fault/abort-1"]
    assert "SIGABRT" in aborted.reason.message and "c10::Error" in aborted.notes["worker_output"]
    hang = got["fault/hang-1"]
    assert (hang.status, hang.reason.kind) == (Status.TIMEOUT, ReasonKind.TIMEOUT)
    assert "--timeout" in hang.reason.message and hang.reason.op == "aten::hang"
    oom = got["fault/oom-1"]
    assert (oom.status, oom.reason.kind) == (Status.CRASH, ReasonKind.OOM), oom.reason
    raised = got["fault/raise-1"]
    assert (raised.status, raised.reason.kind) == (Status.ERROR, ReasonKind.HARNESS)
    assert "model exploded" in raised.reason.message
    assert "exited with code 3" in got["fault/exit-1"].reason.message
    killed = got["fault/sigkill-1"]
    assert (killed.status, killed.reason.kind) == (Status.CRASH, ReasonKind.OOM)
    assert "SIGKILL" in killed.reason.message
    for name, record in got.items():
        if not name.startswith("fault/"):
            assert record.status == Status.PASS, record.reason
        else:
            assert record.repro.startswith("sweep one ")


def compiling_check(ref: ModelRef, cfg: Any, *, compile_s: float = 3.0) -> ModelRecord:
    """A model that sits in its compile stage for ``compile_s`` seconds (progress-bar tests)."""
    breadcrumbs.mark(stage="compile")
    time.sleep(compile_s)
    return ok_check(ref, cfg)


def budget_check(ref: ModelRef, cfg: Any) -> ModelRecord:
    """A passing model whose notes say the memory budget its estimate is held to (MiB)."""
    from sweeper.libraries.transformers.memory_estimate import MIB, budget_bytes

    record = ok_check(ref, cfg)
    record.notes["budget_mb"] = budget_bytes(cfg) // MIB
    return record


class ControlledCheck:
    """A check with a CPU control (as ``Checker`` has): the device run does what the model
    id says in its backward stage (``fault/oom-1`` eats memory), the control does what
    ``on_cpu`` says (``"same"``: the same again; ``"pass"``: passes)."""

    def __init__(self, on_cpu: str) -> None:
        self.on_cpu = on_cpu

    def setup(self) -> ControlledCheck:
        return self

    def check(self, ref: ModelRef) -> ModelRecord:
        name = ref.model_id.split("/", 1)[-1].split("-", 1)[0]
        if ref.model_id.startswith("fault/"):
            breadcrumbs.mark(stage="backward")
            FAULTS[name]()
        return base_record(ref, sweep_id="t", device="trnsim", status=Status.PASS)

    def control(self, ref: ModelRef, stage: str) -> dict[str, Any]:
        name = ref.model_id.split("/", 1)[-1].split("-", 1)[0]
        if self.on_cpu == "same":
            breadcrumbs.mark(stage=stage)
            FAULTS[name]()
        return {"stage": stage, "status": "pass", "reason": None, "backend": None, "pid": os.getpid()}

    def between_models(self) -> None:
        return None
