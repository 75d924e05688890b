"""Graphs AOT autograd cannot trace, failed at once when the same source op comes back.

When AOT autograd raises a fake-tensor exception on a Dynamo graph (a boolean-mask
assignment whose backward needs ``aten.nonzero``), Dynamo adds a graph break, runs that
frame eagerly and compiles each frame it calls on its own; every enclosing frame of the
op is traced in full and fails the same way (kosmos-2: 21 backend calls, 15 of them such
failures, 110 of its 180 s of compile). PyTorch's fake tensors know, when they raise, which
node of the Dynamo graph they were tracing (``torch.fx.traceback``'s current node meta,
its ``stack_trace``): the line of model code whose op cannot be traced.

``remember`` keeps that line (and whether the failure was in the backward) until the
next model (``watching`` notes, while AOT autograd runs, the node each such
exception was raised at); ``refuse_known`` raises the same exception again for a later
graph that holds the same line, before the fake-tensor scan and AOT run, when what made
it fail holds there too (a backward failure needs autograd: grad on and an input of that
line needing a gradient). Dynamo then does what it did before, a graph break counted as
``Backend compiler exception (aten::nonzero)``, so the record is the same; only the
repeated tracing is gone. ``forget`` (the device's reset between models) starts afresh.
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import torch


@dataclass(frozen=True)
class _Failure:
    """How AOT autograd failed on a line of model code (kept by that line)."""

    in_backward: bool
    exception: BaseException


_KNOWN: dict[str, _Failure] = {}


def fallback_exceptions() -> tuple[type[BaseException], ...]:
    """The exceptions Dynamo turns into a graph break when a backend raises them."""
    from torch._dynamo.exc import exceptions_allowed_to_be_fallback

    return tuple(exceptions_allowed_to_be_fallback)


def forget() -> None:
    """Start afresh (between models: another model's lines)."""
    _KNOWN.clear()


def innermost_line(meta: dict[str, Any]) -> str | None:
    """The innermost ``File "...", line N`` of a node's ``stack_trace``: the function's
    name is left out (a frame Dynamo resumes after a graph break is named
    ``torch_dynamo_resume_in_forward_at_N``, the same line of the same file)."""
    trace = meta.get("stack_trace") or ""
    frames = [_LOCATION.match(line.strip()) for line in trace.splitlines()]
    located = [m.group(0) for m in frames if m]
    return located[-1] if located else None


_LOCATION = re.compile(r'File "[^"]+", line \d+')


@contextlib.contextmanager
def watching() -> Iterator[None]:
    """Inside the block, each fallback exception notes the node meta the tracer is at when
    it is made (gone by the time it reaches a handler: the tracing contexts reset it)."""
    import torch.fx.traceback as fx_traceback

    # Each class's own ``__init__`` (a dataclass's), or None when it inherits one.
    originals = {cls: cls.__dict__.get("__init__") for cls in fallback_exceptions()}

    def noting(original: Any) -> Any:
        def init(self: BaseException, *args: Any, **kwargs: Any) -> None:
            original(self, *args, **kwargs)
            self._trnsim_meta = dict(fx_traceback.get_current_meta() or {})  # type: ignore[attr-defined]

        return init

    for cls, original in originals.items():
        cls.__init__ = noting(original or cls.__init__)  # type: ignore[method-assign]
    try:
        yield
    finally:
        for cls, original in originals.items():
            if original is None:
                del cls.__init__
            else:
                cls.__init__ = original  # type: ignore[method-assign]


def remember(exc: BaseException) -> None:
    """Keep the line of model code the tracer was at when ``exc`` was made (``watching``)."""
    meta = getattr(exc, "_trnsim_meta", None) or {}
    line = innermost_line(meta)
    if line is not None:
        _KNOWN[line] = _Failure(bool(meta.get("autograd_backward") or meta.get("in_grad_fn")), exc)


def refuse_known(gm: torch.fx.GraphModule, example_inputs: Any) -> None:
    """Raise the exception a remembered line raised again, when ``gm`` holds that line."""
    if not _KNOWN:
        return
    needs_autograd = torch.is_grad_enabled() and any(
        isinstance(x, torch.Tensor) and x.requires_grad for x in example_inputs)
    for node in gm.graph.nodes:
        failure = _KNOWN.get(innermost_line(node.meta) or "")
        if failure is None:
            continue
        if failure.in_backward and not (needs_autograd and _needs_grad(node)):
            continue
        raise failure.exception.with_traceback(None)


def _needs_grad(node: torch.fx.Node) -> bool:
    """Whether the node's result or one of its tensor inputs needs a gradient (Dynamo's
    example values): its backward is traced only then."""
    values = [node.meta.get("example_value")] + [arg.meta.get("example_value") for arg in node.all_input_nodes]
    return any(isinstance(v, torch.Tensor) and v.requires_grad for v in values)
