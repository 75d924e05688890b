"""The generate stage of a pipeline with a sampling entry (``Built.sample``: a diffusers
pipeline called for a few inference steps): the CPU's images made at load, then the
pipeline called on the device eager and with its denoiser compiled, each run's images
compared with the CPU's."""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

import torch

from sweeper.checks.generation import MODES
from sweeper.checks.numerics import compare, tolerance_for
from sweeper.settings.errors import NumericsError


@dataclass
class SamplingPlan:
    """The CPU's images of a pipeline's sampling entry (``Built.sample``), made at load."""

    images: torch.Tensor
    seconds: float


def sample_on_cpu(built: Any, *, seed: int) -> SamplingPlan | None:
    """The CPU's images for a pipeline with a sampling entry, else None."""
    if built.sample is None:
        return None
    started = time.perf_counter()
    images = built.sample.sample("cpu", compile_backend=None, seed=seed)
    return SamplingPlan(images=images, seconds=time.perf_counter() - started)


def run_sampling(ctx: Any, plan: SamplingPlan) -> dict[str, Any]:
    """The pipeline called on the device, eager and with its denoiser compiled, each
    run's images compared with the CPU's; raises the first failure, or a
    ``NumericsError`` for images past the tolerance."""
    sampler = ctx.built.sample
    tol = tolerance_for(ctx.cfg.device.dtype, atol=ctx.cfg.check.atol)
    backend = ctx.cfg.device.compile_backend or ctx.device.compile_backend
    found: dict[str, Any] = {**sampler.describe(), "modes": [], "cpu_seconds": round(plan.seconds, 3)}
    ctx.findings["generation"] = found
    for mode in MODES:
        started = time.perf_counter()
        entry: dict[str, Any] = {"backend": backend} if mode == "compiled" else {}
        found[mode] = entry
        found["modes"].append(mode)
        try:
            images = sampler.sample(ctx.device.torch_device, compile_backend=backend if mode == "compiled" else None,
                                    seed=ctx.cfg.materialise.seed)
        finally:
            entry["seconds"] = round(time.perf_counter() - started, 3)
        diff = compare(images, plan.images, tol)
        entry.update(max_abs_diff=diff.max_abs, within=diff.within, verdict="equal" if diff.within else "numerics")
        if not diff.within and ctx.cfg.device.dtype != "float32":
            # In a reduced format, two steps of guided sampling amplify each rounding: without
            # a float32 run to measure the gap against, nothing proves the device wrong.
            entry.update(verdict="not_judged", why="images past the tolerance in a reduced format, with no float32 "
                                                   "run of the pipeline to measure the gap against: unproven")
            continue
        if not diff.within:
            raise NumericsError(f"{mode} sampling: max |device - cpu| = {diff.max_abs:.3g} over the pipeline's "
                                f"images exceeds max({tol.atol:g}, {tol.rtol:g} x max|cpu|)")
    return found
