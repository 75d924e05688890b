"""The command that reruns one model alone, as a user would type it."""

from __future__ import annotations

import shlex
from typing import TYPE_CHECKING

from sweeper.records import ModelRef

if TYPE_CHECKING:
    from sweeper.config import SweepConfig


def repro_command(ref: ModelRef, cfg: SweepConfig) -> str:
    """``sweep one MODEL --device D ...`` with the flags that change the outcome."""
    parts = ["sweep", "one", ref.model_id, "--device", cfg.device, "--weights", cfg.weights]
    if ref.model_id.startswith("-"):  # an id like "--device=cuda" would read as an option: after "--"
        parts = [*parts[:2], *parts[3:]]
    if ref.architecture:
        parts += ["--architecture", ref.architecture]
    if cfg.dtype != "float32":
        parts += ["--dtype", cfg.dtype]
    if cfg.compile_backend:
        parts += ["--compile-backend", cfg.compile_backend]
    if cfg.device_profile:
        parts += ["--device-profile", cfg.device_profile]
    if cfg.catalog and ref.source == "catalog":
        parts += ["--catalog", cfg.catalog]
    if ref.model_id.startswith("-"):
        parts += ["--", ref.model_id]
    return shlex.join(parts)
