"""Models that draw random numbers: which random ops they call, from which module, and how
a device's run is made comparable with the CPU's.

A device's generator is not the CPU's: the same seed gives other numbers on a GPU, on
trnsim (its own stream) and on any accelerator. A model that draws in forward (dropout
that ignores eval mode, sampled noise, random masking) therefore gives another output on
the device by design. Comparing the two as if both drew the same stream blames the device
for its generator.

How such a model is judged:

- The CPU reference runs under a ``Tape``: every op PyTorch tags
  ``nondeterministic_seeded`` is recorded in order with the module that called it and
  what it drew. (Only a run that moved the CPU generator pays for the tape: the reference
  runs plain first, and again under the tape when the generator moved.)
- The device run replays the tape (``Replay``): each random op runs on the device with the
  device's own generator, its draw is checked against the CPU's draw of the same op for
  the same distribution (a two-sample Kolmogorov-Smirnov test), and then the CPU's draw is
  written into the device's result. The rest of the model is then compared with the CPU
  as any deterministic model is; a random op whose draws do not follow the CPU's
  distribution is a numerics failure of the device naming the op.
- When the device calls other random ops than the CPU (another order, another shape),
  the output is not compared (recorded as such), never failed.
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import torch
from torch.utils._python_dispatch import TorchDispatchMode

RANDOM = torch.Tag.nondeterministic_seeded
# Kolmogorov-Smirnov: draws differ when D > KS_C * sqrt((n + m) / (n m)); 2.8 is a
# false-alarm rate near 2e-7 per op, so a sweep of thousands of draws raises none by chance.
KS_C = 2.8
MIN_DRAWS = 64  # fewer draws than this cannot tell one distribution from another
MAX_DRAWS = 200_000  # the first this many values of a draw are enough to judge it


@dataclass
class Draw:
    """One random op a run called: its name, the module that called it, and what it drew
    (CPU copies of its tensor results)."""

    op: str
    module: str
    stage: str
    outputs: list[torch.Tensor] = field(default_factory=list)

    def describe(self) -> dict[str, Any]:
        return {"op": self.op, "module": self.module, "stage": self.stage}


def draws(func: Any, args: Any, kwargs: Any) -> bool:
    """Whether this call of an op draws random numbers: PyTorch tags every op that may
    (``nondeterministic_seeded``), attention kernels among them for their ``dropout_p``;
    a call whose dropout probability is 0 (or that is not training) draws nothing, and a
    device that runs attention as another kernel must not look as if it drew otherwise."""
    if RANDOM not in func.tags:
        return False
    schema = func._schema.arguments
    named = {a.name: a.default_value for a in schema if a.has_default_value()}
    named |= dict(zip((a.name for a in schema), args, strict=False)) | dict(kwargs or {})
    for key in ("dropout_p", "p"):
        if key in named and isinstance(named[key], (int, float)) and named[key] == 0:
            return False
    return named.get("train", True) is not False


def op_name(func: Any) -> str:
    """``aten::bernoulli_.float`` -> ``aten::bernoulli_`` (the packet's name)."""
    return f"{func.namespace}::{func._opname}" if hasattr(func, "_opname") else str(func)


def _tensors(value: Any) -> list[torch.Tensor]:
    if isinstance(value, torch.Tensor):
        return [value]
    if isinstance(value, (list, tuple)):
        return [t for t in value if isinstance(t, torch.Tensor)]
    return []


class ModulePath:
    """The qualified name of the innermost module running (global forward hooks while
    open): the caller a random op is reported against."""

    def __init__(self, model: torch.nn.Module | None) -> None:
        self.names = {id(m): n or type(m).__name__ for n, m in model.named_modules()} if model is not None else {}
        self.stack: list[str] = []
        self._handles: list[Any] = []

    def current(self) -> str:
        return self.stack[-1] if self.stack else "(top level)"

    def __enter__(self) -> ModulePath:
        from torch.nn.modules.module import register_module_forward_hook, register_module_forward_pre_hook

        def before(module: torch.nn.Module, args: Any) -> None:
            self.stack.append(self.names.get(id(module), type(module).__name__))

        def after(module: torch.nn.Module, args: Any, output: Any) -> None:
            if self.stack:
                self.stack.pop()

        self._handles = [register_module_forward_pre_hook(before), register_module_forward_hook(after)]
        return self

    def __exit__(self, *exc: object) -> None:
        for handle in self._handles:
            handle.remove()
        self._handles, self.stack = [], []


class Tape(TorchDispatchMode):
    """Records every random op of the block (op, calling module, CPU copies of its draws)."""

    def __init__(self, path: ModulePath, stage: str) -> None:
        super().__init__()
        self.path, self.stage = path, stage
        self.draws: list[Draw] = []

    def __torch_dispatch__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
        out = func(*args, **(kwargs or {}))
        if draws(func, args, kwargs):
            kept = [t.detach().to("cpu", copy=True) for t in _tensors(out)]
            self.draws.append(Draw(op_name(func), self.path.current(), self.stage, kept))
        return out


class Replay(TorchDispatchMode):
    """Feeds a run the draws of a tape, in order: each random op runs as it would (on the
    device, its own generator), its draw is checked against the tape's when ``judge``, and
    the tape's values are written into its result. A random op that does not match the
    tape's next entry (name, shapes) keeps its own draw and is listed in ``unmatched``."""

    def __init__(self, draws: list[Draw], *, judge: bool) -> None:
        super().__init__()
        self.draws, self.judge = draws, judge
        self.at = 0
        self.checks: list[dict[str, Any]] = []
        self.unmatched: list[str] = []

    def __torch_dispatch__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
        out = func(*args, **(kwargs or {}))
        if not draws(func, args, kwargs):
            return out
        name, own = op_name(func), _tensors(out)
        entry = self.draws[self.at] if self.at < len(self.draws) else None
        if entry is not None and name == "aten::native_dropout" and entry.op == "aten::bernoulli_":
            return self._fused_dropout(entry, args, own, out)
        if entry is None or entry.op != name or [t.shape for t in own] != [t.shape for t in entry.outputs]:
            self.unmatched.append(name)
            return out
        self.at += 1
        if self.judge and own:
            self.checks.append({**entry.describe(), **same_distribution(own[0], entry.outputs[0])})
        with torch.no_grad():
            for mine, theirs in zip(own, entry.outputs, strict=True):
                mine.copy_(theirs.to(mine.device))
        return out

    def _fused_dropout(self, entry: Draw, args: Any, own: list[torch.Tensor], out: Any) -> Any:
        """A device's fused ``native_dropout`` against the CPU's ``dropout``, which draws its
        keep-mask with ``bernoulli_`` and scales it by 1 / (1 - p) before multiplying: the
        device's mask is judged against the CPU's, then output and mask are the CPU's."""
        inp, p = args[0], float(args[1])
        cpu_mask = entry.outputs[0] if entry.outputs else None
        output, mask = own[0], own[1]
        if cpu_mask is None or cpu_mask.shape != inp.shape or p >= 1.0:
            self.unmatched.append("aten::native_dropout")
            return out
        self.at += 1
        if self.judge:
            self.checks.append({**entry.describe(), "device_op": "aten::native_dropout",
                                **same_distribution(mask.to(torch.float32), cpu_mask)})
        with torch.no_grad():
            keep = cpu_mask.to(inp.device, inp.dtype)
            output.copy_(inp * keep.div_(1 - p))
            mask.copy_(cpu_mask.to(mask.device).bool())
        return out

    @property
    def complete(self) -> bool:
        """Whether every draw of the tape was fed, and no random op went unmatched."""
        return self.at == len(self.draws) and not self.unmatched

    def wrong(self) -> list[dict[str, Any]]:
        """The judged draws whose distribution is not the CPU's."""
        return [c for c in self.checks if c.get("judged") and not c["same"]]


def same_distribution(got: torch.Tensor, ref: torch.Tensor) -> dict[str, Any]:
    """Two-sample Kolmogorov-Smirnov test of a device draw against the CPU's draw of the
    same op: ``same`` unless the largest gap between their empirical distributions
    exceeds ``KS_C * sqrt((n + m) / (n m))``; too few values are not judged."""
    a = got.detach().to("cpu").reshape(-1)[:MAX_DRAWS].to(torch.float64)
    b = ref.detach().to("cpu").reshape(-1)[:MAX_DRAWS].to(torch.float64)
    a, b = a[torch.isfinite(a)], b[torch.isfinite(b)]
    n, m = a.numel(), b.numel()
    if min(n, m) < MIN_DRAWS:
        return {"judged": False, "same": True, "values": min(n, m)}
    a, b = torch.sort(a).values, torch.sort(b).values
    points = torch.cat([a, b])
    gap = (torch.searchsorted(a, points, right=True) / n - torch.searchsorted(b, points, right=True) / m).abs()
    statistic = float(gap.max())
    bound = KS_C * math.sqrt((n + m) / (n * m))
    return {"judged": True, "same": statistic <= bound, "ks": round(statistic, 4), "bound": round(bound, 4),
            "values": min(n, m)}


def generator_state() -> torch.Tensor:
    """The CPU generator's state: a run that changed it drew random numbers."""
    return torch.default_generator.get_state()


@contextlib.contextmanager
def taped(model: torch.nn.Module, stage: str) -> Iterator[Tape]:
    """Record the random ops run inside the block (``Tape``), naming their modules."""
    with ModulePath(model) as path, Tape(path, stage) as tape:
        yield tape


@contextlib.contextmanager
def replayed(draws: list[Draw] | None, *, judge: bool) -> Iterator[Replay | None]:
    """Feed the block the tape's draws (``Replay``); nothing when there is no tape."""
    if not draws:
        yield None
        return
    with Replay(draws, judge=judge) as replay:
        yield replay
