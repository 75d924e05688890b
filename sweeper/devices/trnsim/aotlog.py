"""AOT autograd without its graph logging, while nobody reads the logs.

AOT autograd renders the joint, forward and backward graphs as text (``print_readable``)
for its structured logs on every compile, whether or not any log is on: ``AOTConfig``'s
``enable_log`` defaults to True and ``aot_module_simplified`` offers no way to turn it off.
For a tiny model that text is a few percent of the whole compile. Within ``quiet()``, the
AOT configs made have ``enable_log=False``, unless the user asked for compile logs
(``TORCH_LOGS``, ``TORCH_TRACE``, ``TORCH_COMPILE_DEBUG`` or ``torch._logging.set_logs``):
then AOT logs as usual. The graphs themselves do not change.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
from collections.abc import Iterator
from typing import Any

_LOG_ENV = ("TORCH_LOGS", "TORCH_TRACE", "TORCH_COMPILE_DEBUG")
_ARTIFACTS = ("aot_graphs", "aot_joint_graph", "graph_code")
_QUIET: dict[str, Any] = {}


def logs_wanted() -> bool:
    """Whether the user asked for torch.compile's logs in any way we can see."""
    if any(os.environ.get(name, "") not in ("", "0") for name in _LOG_ENV):
        return True
    try:
        from torch._logging._internal import LazyTraceHandler, log_state, trace_log
    except ImportError:
        return True  # cannot tell: keep torch's default
    # The structured trace (tlparse) writes only when its lazy handler has a folder.
    tracing = any(isinstance(h, LazyTraceHandler) and h.root_dir for h in trace_log.handlers)
    return tracing or any(log_state.is_artifact_enabled(a) for a in _ARTIFACTS)


def _quiet_config(base: type) -> type | None:
    """``base`` (AOTConfig) with ``enable_log`` defaulting to False; None if it has no such field."""
    if "config" not in _QUIET:
        fields = {f.name for f in dataclasses.fields(base)} if dataclasses.is_dataclass(base) else set()
        _QUIET["config"] = dataclasses.make_dataclass(
            base.__name__, [("enable_log", bool, dataclasses.field(default=False))], bases=(base,),
            frozen=True, namespace={"__module__": base.__module__}) if "enable_log" in fields else None
    return _QUIET["config"]


@contextlib.contextmanager
def quiet() -> Iterator[None]:
    """AOT autograd compiles in this block skip rendering graphs for logs nobody reads."""
    try:
        import torch._functorch.aot_autograd as aot
    except ImportError:
        yield
        return
    base = aot.__dict__.get("AOTConfig")
    quiet_cls = None if base is None or logs_wanted() else _quiet_config(base)
    if quiet_cls is None:
        yield
        return
    aot.AOTConfig = quiet_cls
    try:
        yield
    finally:
        aot.AOTConfig = base
