"""Comparing device results with a CPU reference: tolerances per dtype, differences, RNG.

The forward and backward stages compare what the device computed with the same model run
on the CPU (same weights, inputs, dtype, eval mode and RNG state). This module holds the
arithmetic of that comparison, kept apart from the stages so reports and tests share it:

- ``Tolerance``/``tolerance_for`` (from ``sweeper.checks.tolerances``): how far a result may be
  from the reference, per dtype.
- ``compare``/``compare_grads``: the largest absolute difference, and the same divided by
  the reference's largest magnitude (a tensor-wide relative difference: an element-wise
  one explodes wherever the reference is near zero, which says nothing about the device).
- ``seeded``: the same seed in every RNG a model may draw from, set before each run.
- ``cpu_twin``: a CPU copy of a model already on the device, for a second CPU run.
"""

from __future__ import annotations

import contextlib
import copy
import math
import random
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

import torch

from sweeper.checks.tolerances import Tolerance, tolerance_for

__all__ = ["Diff", "Tolerance", "compare", "compare_grads", "cpu_twin", "has_nan", "format_error", "seeded",
           "tolerance_for"]


@dataclass(frozen=True)
class Diff:
    """How far a result is from its reference, and whether that is within tolerance."""

    max_abs: float
    max_rel: float
    within: bool
    where: str | None = None  # the parameter furthest off (gradients)

    def to_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {"max_abs": self.max_abs, "max_rel": self.max_rel, "within": self.within}
        if self.where is not None:
            data["where"] = self.where
        return data


def compare(got: torch.Tensor, ref: torch.Tensor, tol: Tolerance) -> Diff:
    """Compare one tensor with its reference (both moved to the CPU in float32).

    Equal non-finite values count as matching (logits masked with -inf by design, on
    both sides); a device value that differs from a non-finite reference does not.
    """
    got32, ref32 = got.detach().to("cpu", torch.float32), ref.detach().to("cpu", torch.float32)
    if not ref32.numel():
        return Diff(0.0, 0.0, True)
    diff = (got32 - ref32).abs()
    diff[(got32 == ref32) | (got32.isnan() & ref32.isnan())] = 0.0
    max_abs = float(diff.max())
    finite_ref = ref32[ref32.isfinite()]
    scale = float(finite_ref.abs().max()) if finite_ref.numel() else 0.0
    if math.isnan(max_abs):
        return Diff(max_abs, max_abs, False)
    max_rel = max_abs / scale if scale > 0 else (0.0 if max_abs == 0 else math.inf)
    return Diff(max_abs, max_rel, max_abs <= max(tol.atol, tol.rtol * scale))


def compare_grads(got: Mapping[str, torch.Tensor], ref: Mapping[str, torch.Tensor], tol: Tolerance) -> Diff | None:
    """Compare gradients by parameter name (those both sides have); None when none.

    The gradients count as one output whose scale is the largest reference gradient
    (``max_rel`` is relative to it, as for the forward output), judged tensor by tensor:
    a tensor passes within ``atol`` x that scale or ``rtol`` x its own largest gradient.
    Gradients that should vanish (a key bias under softmax) are noise relative to their
    own scale; a device bug in a small-gradient tensor still shows against its own.
    Each tensor is judged as ``compare`` judges it, with the same figures.
    """
    names = [n for n in ref if n in got and got[n].shape == ref[n].shape]
    if not names:
        return None
    magnitude, own_scale, gap = _per_tensor_maxima([got[n] for n in names], [ref[n] for n in names])
    scale = max(magnitude)
    within = [not math.isnan(g) and g <= max(tol.atol * scale, tol.rtol * s) for g, s in zip(gap, own_scale)]
    worst = max(range(len(names)), key=lambda i: (not within[i], _order(gap[i])))
    max_abs = max(_order(g) for g in gap)
    return Diff(
        max_abs=max_abs,
        max_rel=max_abs / scale if scale > 0 else (0.0 if max_abs == 0 else math.inf),
        within=all(within),
        where=names[worst],
    )


# Elements compared in one batch. It bounds the host memory a comparison adds (a few
# float32 copies of this many elements, or of one larger tensor, as a tensor-by-tensor
# comparison made): small enough that a device run and its CPU control, whose gradients
# need no host copies, stay as far apart as before under one memory limit.
_BATCH_ELEMENTS = 1 << 20


def _per_tensor_maxima(got: list[torch.Tensor], ref: list[torch.Tensor]) -> tuple[list[float], list[float], list[float]]:
    """For each (device, reference) pair of equal shape: the reference's largest magnitude
    (NaN and infinities included), its largest finite magnitude, and the largest
    difference as ``compare`` counts it (equal values and NaN against NaN count as 0);
    0 for empty tensors.

    A model has hundreds of parameters: each batch of them is reduced with a few fused
    (``_foreach``) ops rather than a dozen small ops per tensor; only a tensor whose
    figures come out non-finite is looked at again, element by element."""
    count = len(ref)
    magnitude, own_scale, gap = [0.0] * count, [0.0] * count, [0.0] * count
    filled = [i for i in range(count) if ref[i].numel()]
    for batch in _batches(filled, [ref[i].numel() for i in filled]):
        g = [got[i].detach().to("cpu", torch.float32) for i in batch]
        r = [ref[i].detach().to("cpu", torch.float32) for i in batch]
        diff = torch._foreach_sub(g, r)
        torch._foreach_abs_(diff)
        for k, i, largest, off in zip(range(len(batch)), batch, _maxima(r), _maxima(diff)):
            magnitude[i], own_scale[i], gap[i] = largest, largest, off
            if not math.isfinite(largest):  # infinities or NaN in the reference: its finite part
                finite = r[k][r[k].isfinite()]
                own_scale[i] = float(finite.abs().max()) if finite.numel() else 0.0
            if math.isnan(off):  # NaN on both sides, or the same infinity, is a match
                d = diff[k]
                d[(g[k] == r[k]) | (g[k].isnan() & r[k].isnan())] = 0.0
                gap[i] = float(d.max())
    return magnitude, own_scale, gap


def _batches(indices: list[int], sizes: list[int]) -> list[list[int]]:
    """``indices`` in consecutive runs of at most ``_BATCH_ELEMENTS`` elements (a larger
    tensor alone)."""
    out: list[list[int]] = []
    total = 0
    for index, size in zip(indices, sizes):
        if not out or total + size > _BATCH_ELEMENTS:
            out.append([])
            total = 0
        out[-1].append(index)
        total += size
    return out


def _maxima(tensors: list[torch.Tensor]) -> list[float]:
    """The largest magnitude of each (non-empty) tensor; NaN propagates."""
    return torch.stack(torch._foreach_norm(tensors, math.inf)).tolist() if tensors else []


def _order(value: float) -> float:
    """NaN sorts (and aggregates) as the largest difference."""
    return math.inf if math.isnan(value) else value


def has_nan(value: torch.Tensor | Mapping[str, torch.Tensor]) -> bool:
    """Whether a tensor (or any tensor of a mapping) holds a NaN."""
    tensors = value.values() if isinstance(value, Mapping) else [value]
    return any(bool(torch.isnan(t.detach()).any()) for t in tensors if t.is_floating_point())


@contextlib.contextmanager
def seeded(seed: int) -> Iterator[None]:
    """Seed every RNG a model may draw from (torch on every device, Python, NumPy).

    Set right before each run, so a model that samples (patch dropout, random masking)
    draws the same numbers on the device and on the CPU wherever the device's generator
    follows torch's seed.
    """
    torch.manual_seed(seed)
    random.seed(seed)
    with contextlib.suppress(ImportError):
        import numpy

        numpy.random.seed(seed % 2**32)
    yield


def cpu_twin(model: torch.nn.Module) -> torch.nn.Module:
    """A CPU copy of ``model`` (parameters and buffers copied straight to the CPU, ties
    kept), leaving the model on the device untouched."""
    memo: dict[int, Any] = {}
    for tensor in [*model.parameters(), *model.buffers()]:
        cpu = tensor.detach().to("cpu")
        if isinstance(tensor, torch.nn.Parameter):
            cpu = torch.nn.Parameter(cpu, requires_grad=tensor.requires_grad)
        memo[id(tensor)] = cpu
    twin = copy.deepcopy(model, memo)
    return twin.to("cpu")


# A reduced-precision result over tolerance gets one more look, against float32 (as
# PyTorch's dynamo accuracy harness uses a float64 reference): when the device is no
# further from float32 than this many times the CPU's own reduced-precision run is, the
# difference is the format's rounding (summation orders, kernels) and not the device's.
FORMAT_MULTIPLIER = 3.0


def format_error(got: Mapping[str, torch.Tensor], ref: Mapping[str, torch.Tensor],
                 precise: Mapping[str, torch.Tensor]) -> dict[str, Any]:
    """The device's and the CPU's largest distance from a float32 run, and the verdict."""
    names = [n for n in precise if n in got and n in ref and got[n].shape == ref[n].shape == precise[n].shape]
    device = max((_distance(got[n], precise[n]) for n in names), default=0.0)
    cpu = max((_distance(ref[n], precise[n]) for n in names), default=0.0)
    return {"device_vs_float32": device, "cpu_vs_float32": cpu,
            "within": bool(names) and device <= FORMAT_MULTIPLIER * cpu}


def _distance(a: torch.Tensor, b: torch.Tensor) -> float:
    return _order(float((a.detach().to("cpu", torch.float32) - b.detach().to("cpu", torch.float32)).abs().max()))
