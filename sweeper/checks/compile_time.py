"""Where a stage's compile time goes: Dynamo's tracing, AOT autograd's, and the backend's.

Dynamo's and AOT autograd's own tracing are the floor of any check that compiles: PyTorch
does that work for every user of ``torch.compile``, whatever the device. The rest of a
compile is the backend's (a device's lowering, its op checks) or the sweep's own. A stage
is measured by what it adds to Dynamo's timers (``torch._dynamo.utils
.compilation_time_metrics``, which Dynamo fills for every compile) and to the device's own
phase clock, when it keeps one (``Device.compile_phases``):

- ``dynamo``: frame compiles less the time in the backend (``_compile.compile_inner`` less
  ``OutputGraph.call_user_compiler``): bytecode tracing, guards, graph building;
- ``aot_autograd``: AOT autograd's own tracing (joint graph, partitioning): the device's
  ``aot`` phase where it keeps one (its lowering, called from inside, left out), else
  ``create_aot_dispatcher_function`` whole;
- ``backend``: the rest of the backend's time, with the device's named phases beside it.

Seconds are wall seconds of the worker's thread, rounded to the millisecond.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

# Dynamo's timer keys (``dynamo_timed``), as torch names them.
FRAME_COMPILE = "_compile.compile_inner"
BACKEND_CALL = "OutputGraph.call_user_compiler"
AOT_DISPATCH = "create_aot_dispatcher_function"
FLOOR = ("dynamo", "aot_autograd")


def _timers() -> dict[str, list[float]]:
    try:
        from torch._dynamo.utils import compilation_time_metrics
    except ImportError:  # a torch without Dynamo: nothing compiles
        return {}
    return compilation_time_metrics


def _marks(timers: dict[str, list[float]]) -> dict[str, tuple[int, int]]:
    """Where each timer's list stands: (the list's identity, its length)."""
    return {key: (id(values), len(values)) for key, values in timers.items()}


def _added(timers: dict[str, list[float]], marks: dict[str, tuple[int, int]], key: str) -> float:
    """Seconds ``key``'s timer gained since ``marks``. ``torch._dynamo.reset()`` empties
    the timers: a list made since then counts whole."""
    values = timers.get(key) or []
    ident, length = marks.get(key, (None, 0))
    start = length if ident == id(values) and length <= len(values) else 0
    return float(sum(values[start:]))


@contextlib.contextmanager
def measured(device: Any) -> Iterator[dict[str, float]]:
    """Measure the compile time of the block: the yielded dict is filled when the block
    ends (empty when nothing compiled) with ``dynamo``, ``aot_autograd``, ``backend`` and
    the device's phases (``Device.compile_phases``)."""
    timers = _timers()
    marks = _marks(timers)
    before = device.compile_phases()
    out: dict[str, float] = {}
    try:
        yield out
    finally:
        timers = _timers()
        frame, backend_call = _added(timers, marks, FRAME_COMPILE), _added(timers, marks, BACKEND_CALL)
        after = device.compile_phases()
        own = {name: after[name] - before.get(name, 0.0) for name in after}
        own = {name: seconds for name, seconds in own.items() if seconds > 0}
        if frame > 0 or backend_call > 0:
            aot = own.pop("aot", None)
            if aot is None:
                aot = _added(timers, marks, AOT_DISPATCH)
            out["dynamo"] = max(0.0, frame - backend_call)
            out["aot_autograd"] = aot
            out["backend"] = max(0.0, backend_call - aot - sum(own.values()))
            out.update(own)
            for name in list(out):
                out[name] = round(out[name], 3)
                if out[name] == 0 and name not in ("dynamo", "aot_autograd", "backend"):
                    del out[name]  # a device phase this stage did not reach

