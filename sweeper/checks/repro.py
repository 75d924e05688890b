"""The command that reruns one model alone, as a user would type it, from any folder and on
any machine: a catalog's entry travels as the flags that describe it (``--library``,
``--model-type``, ``--task``), a shipped device profile by its name, so the command names
no file of the machine that made it."""

from __future__ import annotations

import os
import shlex
from typing import TYPE_CHECKING

from sweeper.records import ModelRef, Stage

if TYPE_CHECKING:
    from sweeper.settings.config import SweepConfig

ALL_STAGES = tuple(s.value for s in Stage)


def repro_command(ref: ModelRef, cfg: SweepConfig) -> str:
    """``sweep one ... MODEL`` with every flag that changes the outcome. A catalog entry is
    described by flags, not by the catalog's path; only an entry that carries its own config
    names the catalog, relative to the sweep's folder (the command then runs from there).
    A profile that is not a shipped one is named by its absolute path."""
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
        parts += ["--device-profile", _profile_name(cfg.device.profile)]
    if ref.source == "catalog":
        if ref.config is not None and cfg.source.catalog:
            parts += ["--catalog", os.path.relpath(os.path.abspath(cfg.source.catalog), os.path.abspath(cfg.out_dir))]
        else:
            for flag, value in (("--library", ref.library_name), ("--model-type", ref.model_type),
                                ("--task", ref.pipeline_tag), ("--revision", ref.revision)):  # fmt: skip
                if value:
                    parts += [flag, value]
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


def _profile_name(profile: str) -> str:
    """A shipped profile by its name (given as a name or as its file), else the absolute path."""
    from pathlib import Path

    from sweeper.devices.trnsim.profile import SHIPPED_PROFILES, is_shipped_name

    if is_shipped_name(profile):
        return profile
    path = Path(profile).resolve()
    shipped = Path(str(SHIPPED_PROFILES)).resolve()
    if path.parent == shipped and path.suffix == ".toml" and path.is_file():
        return path.stem
    return str(path)
