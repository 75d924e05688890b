"""The command that reruns one model alone, as a user would type it, from any folder."""

from __future__ import annotations

import os
import shlex
from typing import TYPE_CHECKING

from sweeper.records import ModelRef, Stage

if TYPE_CHECKING:
    from sweeper.settings.config import SweepConfig

ALL_STAGES = tuple(s.value for s in Stage)


def repro_command(ref: ModelRef, cfg: SweepConfig) -> str:
    """``sweep one ... MODEL`` with every flag that changes the outcome; paths absolute, so
    the command runs from any folder."""
    parts = ["sweep", "one", "--device", cfg.device.spec, "--weights", cfg.materialise.weights]
    if ref.architecture:
        parts += ["--architecture", ref.architecture]
    if cfg.device.dtype != "float32":
        parts += ["--dtype", cfg.device.dtype]
    if tuple(cfg.check.stages) != ALL_STAGES:
        parts += ["--stages", ",".join(cfg.check.stages)]
    if cfg.device.compile_backend:
        parts += ["--compile-backend", cfg.device.compile_backend]
    if cfg.device.profile:
        parts += ["--device-profile", os.path.abspath(cfg.device.profile)]
    if cfg.source.catalog and ref.source == "catalog":
        parts += ["--catalog", os.path.abspath(cfg.source.catalog)]
    if cfg.materialise.seed:
        parts += ["--seed", str(cfg.materialise.seed)]
    for flag, on in (("--collect-all", cfg.device.collect_all), ("--retie-weights", cfg.device.retie_weights),
                     ("--whole-graph", cfg.device.whole_graph), ("--strict-float32", cfg.device.strict_float32),
                     ("--trust-remote-code", cfg.materialise.trust_remote_code)):  # fmt: skip
        if on:
            parts.append(flag)
    # After "--" an id that looks like a flag (``--device=cuda``) is still the model.
    parts += ["--", ref.model_id] if ref.model_id.startswith("-") else [ref.model_id]
    return shlex.join(parts)
