"""The command that reruns one model alone, as a user would type it, from any folder."""

from __future__ import annotations

import os
import shlex
from typing import TYPE_CHECKING

from sweeper.records import ModelRef, Stage

if TYPE_CHECKING:
    from sweeper.config import SweepConfig

ALL_STAGES = tuple(s.value for s in Stage)


def repro_command(ref: ModelRef, cfg: SweepConfig) -> str:
    """``sweep one ... MODEL`` with every flag that changes the outcome; paths absolute, so
    the command runs from any folder."""
    parts = ["sweep", "one", "--device", cfg.device, "--weights", cfg.weights]
    if ref.architecture:
        parts += ["--architecture", ref.architecture]
    if cfg.dtype != "float32":
        parts += ["--dtype", cfg.dtype]
    if tuple(cfg.stages) != ALL_STAGES:
        parts += ["--stages", ",".join(cfg.stages)]
    if cfg.compile_backend:
        parts += ["--compile-backend", cfg.compile_backend]
    if cfg.device_profile:
        parts += ["--device-profile", os.path.abspath(cfg.device_profile)]
    if cfg.catalog and ref.source == "catalog":
        parts += ["--catalog", os.path.abspath(cfg.catalog)]
    if cfg.seed:
        parts += ["--seed", str(cfg.seed)]
    for flag, on in (("--collect-all", cfg.collect_all), ("--retie-weights", cfg.retie_weights),
                     ("--trust-remote-code", cfg.trust_remote_code)):  # fmt: skip
        if on:
            parts.append(flag)
    # After "--" an id that looks like a flag (``--device=cuda``) is still the model.
    parts += ["--", ref.model_id] if ref.model_id.startswith("-") else [ref.model_id]
    return shlex.join(parts)
