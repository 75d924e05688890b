"""The worker process that runs models one at a time (used by the process and Ray executors).

A worker sets its check up once (``Check.setup``: the device, which for trnsim can register
only once per process), then loops: receive a ref, run ``check``, send the record back,
reset what one model may leave behind (dynamo caches, default dtype, grad mode,
deterministic flags, thread count, the check's device caches)
and compare a snapshot of patchable torch/transformers attributes with the one taken at
start. A model that monkey-patched torch or transformers makes the worker ask to be
recycled, so the next model starts in a fresh process.

Messages over the socket: parent -> ``("run", ref)`` | ``("control", ref, stage)`` | ``("stop",)``;
worker -> ``("ready", pid)`` once, then ``("done", record, leaks)`` per model and
``("controlled", verdict, leaks)`` per control (``None``: the check has no CPU control).
"""

from __future__ import annotations

import contextlib
import faulthandler
import gc
import os
import pickle
import resource
import signal
import sys
import threading
import time
import traceback
from multiprocessing.connection import Connection
from typing import Any

from sweeper.executors import breadcrumbs
from sweeper.executors.base import Check, as_check, failure_record
from sweeper.records import ModelRecord, ModelRef, ReasonKind, Status

THREAD_VARS = ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS")

# Attributes model code is known to patch (remote code, compat shims). Compared by
# identity between models; only modules already imported are looked at.
WATCHED: dict[str, tuple[str, ...]] = {
    "torch": ("load", "matmul", "cat", "empty", "zeros", "ones", "tensor", "compile"),
    "torch.nn": ("Module", "Linear", "Embedding", "LayerNorm"),
    "torch.nn.Module": ("__call__", "_call_impl", "to", "forward", "__getattr__", "__setattr__", "register_buffer"),
    "torch.Tensor": ("__torch_function__", "to", "__getitem__", "view", "masked_fill"),
    "torch.nn.functional": ("linear", "softmax", "gelu", "layer_norm", "scaled_dot_product_attention", "embedding"),
    "transformers": ("AutoModel", "PreTrainedModel", "AutoConfig"),
    "transformers.modeling_utils.PreTrainedModel": ("from_pretrained", "_init_weights", "post_init", "__init__"),
    "builtins": ("open", "print", "__import__"),
}


def _resolve(path: str) -> Any:
    """The object at a dotted path whose module is already imported, else None."""
    parts = path.split(".")
    for cut in range(len(parts), 0, -1):
        mod = sys.modules.get(".".join(parts[:cut]))
        if mod is not None:
            obj: Any = mod
            for attr in parts[cut:]:
                obj = getattr(obj, attr, None)
            return obj
    return None


def snapshot() -> dict[str, int]:
    """Identity of every watched attribute that exists now (``path.attr`` -> ``id``)."""
    seen: dict[str, int] = {}
    for owner, attrs in WATCHED.items():
        obj = _resolve(owner)
        if obj is None:
            continue
        for attr in attrs:
            value = obj.__dict__.get(attr) if isinstance(obj, type) else getattr(obj, attr, None)
            if value is not None:
                seen[f"{owner}.{attr}"] = id(value)
    # A registered device backend (PrivateUse1 renamed) cannot be unregistered.
    seen[f"privateuse1={_privateuse1_name()}"] = 0
    return seen


def _privateuse1_name() -> str:
    """The PrivateUse1 backend's name; torch's default while torch is not even imported."""
    torch = sys.modules.get("torch")
    if torch is not None:
        with contextlib.suppress(Exception):
            return str(torch._C._get_privateuse1_backend_name())
    return "privateuseone"


def leaks(before: dict[str, int], after: dict[str, int]) -> list[str]:
    """Watched attributes that changed or vanished (new ones appear when a module loads)."""
    return sorted(k for k, v in before.items() if after.get(k) != v)


class TorchDefaults:
    """The global torch settings a model may change, restored after each model.

    Captured at worker start when torch is already imported (the device's set-up may have
    chosen them); otherwise torch's own defaults, since the first model to import torch
    may already have changed them by the time the worker looks.
    """

    def __init__(self, num_threads: int) -> None:
        self.num_threads = num_threads
        self.dtype_name = "float32"
        self.deterministic = False
        self.cudnn = (False, False)
        self.matmul_precision = "highest"

    def capture(self) -> None:
        """Take the current settings as the ones to restore (call before any model runs)."""
        torch = sys.modules.get("torch")
        if torch is None:
            return
        self.dtype_name = str(torch.get_default_dtype()).removeprefix("torch.")
        self.deterministic = torch.are_deterministic_algorithms_enabled()
        self.cudnn = (torch.backends.cudnn.benchmark, torch.backends.cudnn.deterministic)
        self.matmul_precision = torch.get_float32_matmul_precision()

    def restore(self) -> None:
        """Undo per-model global state; cheap when torch was never imported."""
        torch = sys.modules.get("torch")
        if torch is None:
            return
        if "torch._dynamo" in sys.modules:
            torch._dynamo.reset()
        torch.set_default_dtype(getattr(torch, self.dtype_name))
        torch.set_grad_enabled(True)
        torch.use_deterministic_algorithms(self.deterministic)
        torch.backends.cudnn.benchmark, torch.backends.cudnn.deterministic = self.cudnn
        torch.set_float32_matmul_precision(self.matmul_precision)
        _reset_default_device(torch)
        if torch.get_num_threads() != self.num_threads:
            torch.set_num_threads(self.num_threads)


def _reset_default_device(torch: Any) -> None:
    """No default device, as the worker started. torch 2.9's ``set_default_device(None)``
    leaves ``device_context = None`` behind, after which its ``get_default_device()`` fails
    (transformers calls it in every ``post_init``): reset only what was set, and drop that."""
    holder = getattr(torch, "_GLOBAL_DEVICE_CONTEXT", None)
    if holder is not None and getattr(holder, "device_context", None) is not None:
        with contextlib.suppress(Exception):
            torch.set_default_device(None)
    if holder is not None and hasattr(holder, "device_context") and holder.device_context is None:
        del holder.device_context


def _die_with_parent() -> None:
    """End this worker when its parent goes (driver SIGKILLed, Ray actor lost)."""
    if sys.platform.startswith("linux"):
        with contextlib.suppress(Exception):
            import ctypes

            ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    parent = os.getppid()

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(1.0)
        os._exit(1)

    threading.Thread(target=watch, name="parent-watch", daemon=True).start()


def run_one(check: Check, ref: ModelRef, cfg: Any) -> ModelRecord:
    """``check.check(ref)``; an exception from it (it should never raise) becomes one record."""
    breadcrumbs.begin(ref.key)
    try:
        return check.check(ref)
    except BaseException as exc:  # noqa: BLE001 - one model's failure must not end the worker
        where = breadcrumbs.current().describe()
        tb = traceback.format_exception_only(type(exc), exc)[-1].strip()
        kind = ReasonKind.OOM if isinstance(exc, MemoryError) else ReasonKind.HARNESS
        return failure_record(
            ref, cfg, status=Status.ERROR, kind=kind, message=f"check raised {where}: {tb}",
            stage=breadcrumbs.current().stage, infrastructure=True,
        )


def run_control(check: Check, ref: ModelRef, stage: str) -> dict[str, Any] | None:
    """``check.control(ref, stage)``: the CPU rerun of a stage whose worker crashed, hung or
    ran out of memory. ``None`` when the check has none; its own exception is its verdict."""
    control = getattr(check, "control", None)
    if control is None:
        return None
    breadcrumbs.begin(ref.key)
    try:
        verdict = control(ref, stage)
        if isinstance(verdict, dict):
            # This fresh worker's peak (the kernel's count, not a poll): how far under the
            # limit the CPU ran the same work, beside the device run's overrun.
            verdict["peak_rss_mb"] = round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)
        return verdict
    except BaseException as exc:  # noqa: BLE001 - a control that cannot run proves nothing
        text = traceback.format_exception_only(type(exc), exc)[-1].strip()
        return {"stage": stage, "status": Status.ERROR.value, "backend": None,
                "reason": {"kind": ReasonKind.HARNESS.value, "message": f"control raised: {text}", "stage": stage}}


def main(fd: int) -> None:
    """Entry point of a worker process: ``python -m sweeper.executors.worker FD``.

    The first message on the socket is ``(cfg, check_blob, progress_path, fault_path,
    num_threads)``; thread-count variables are already in the environment.
    """
    conn = Connection(fd)
    cfg, check_blob, progress_path, fault_path, num_threads = conn.recv()
    _die_with_parent()
    fault_file = open(fault_path, "w")  # noqa: SIM115 - must stay open for the process's life
    faulthandler.enable(file=fault_file, all_threads=False)
    breadcrumbs.attach(progress_path)
    breadcrumbs.listen(lambda record: conn.send(("earned", record)))
    check = as_check(pickle.loads(check_blob), cfg)
    check.setup()  # errors surface per model, in each record
    _warm_up(check)
    defaults = TorchDefaults(num_threads)
    defaults.capture()
    before = snapshot()
    conn.send(("ready", os.getpid()))
    while True:
        try:
            msg = conn.recv()
        except (EOFError, OSError):
            return
        if msg[0] not in ("run", "control"):
            return
        result = run_one(check, msg[1], cfg) if msg[0] == "run" else run_control(check, msg[1], msg[2])
        _between_models(defaults, check)
        after = snapshot()
        conn.send(("done" if msg[0] == "run" else "controlled", result, leaks(before, after)))
        # Modules first imported by this model join the baseline.
        before = {**after, **before}


def _warm_up(check: Check) -> None:
    """Let the device pay its first-use costs now (shown as "starting worker"), then freeze
    what they left, so the first model's collections do not walk it either."""
    device = getattr(check, "device", None)
    if device is None:  # a plain check function, or a device that failed to set up (reported per model)
        return
    try:
        device.warm_up()
    except Exception:  # noqa: BLE001 - a device that cannot warm up still runs models
        traceback.print_exc()
    if "torch" in sys.modules:
        gc.collect()
        gc.freeze()


def _between_models(defaults: TorchDefaults, check: Check) -> None:
    defaults.restore()
    # Device state lives in torch; without torch there is nothing to reset (and resetting
    # would import it, a second's work charged to the model that just finished).
    if "torch" in sys.modules:
        with contextlib.suppress(Exception):
            check.between_models()
    if "torch" in sys.modules:  # tensors in reference cycles hold real memory; else skip the pause
        gc.collect()
        # What survives is live (modules, caches): freeze it so the next collections, here and
        # inside the next model, scan only that model's objects. A full pass over torch and
        # transformers costs ~0.4 s, more than a tiny model's whole check.
        gc.freeze()


if __name__ == "__main__":
    main(int(sys.argv[1]))
