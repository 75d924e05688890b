"""Every number a sweep takes, checked before anything runs: one line, exit 2.

A count of 0 workers slots, a ``nan`` timeout that never fires, a negative memory limit
that makes every model ``oom``: each looks like a working sweep until hours later. Types
are checked per settings file, so the message names the file and the line of the key.
"""

from __future__ import annotations

import dataclasses
import math
import re
import types
import typing
from pathlib import Path
from typing import Any

from sweeper.settings.errors import UsageError

# (setting, smallest, largest, what it is); None = no bound on that side. A setting whose
# value is None (max_params, workers, ...) means "decide at run time" and is not checked.
MAX_MODELS = 100_000_000  # well above the whole Hub
MIN_CPUS = 0.01
COUNTS: tuple[tuple[str, int, int | None, str], ...] = (
    ("top", 1, MAX_MODELS, "a number of models"),
    ("workers", 1, 4096, "a number of worker processes"),
    ("retries", 0, 100, "a number of retries"),
    ("worker_max_models", 1, None, "a number of models per worker"),
    ("max_in_flight", 1, 10_000_000, "a number of models in flight"),
    ("memory_limit_mb", 1, 1 << 30, "megabytes"),
    ("batch_size", 1, 4096, "a batch size"),
    ("seq_len", 1, 1 << 20, "a sequence length"),
    ("max_parameters", 1, None, "a number of parameters"),
    ("max_params", 1, None, "a number of pretrained parameters"),
    ("hub_tries", 1, 100, "tries per Hub request"),
    ("seed", 0, (1 << 32) - 1, "a seed"),
)
# (setting, exclusive lower bound, largest, what it is); finite always, None = decided at run time.
REALS: tuple[tuple[str, float, float, str], ...] = (
    ("timeout", 0.0, 30 * 24 * 3600.0, "seconds"),
    ("shapes_timeout", 0.0, 30 * 24 * 3600.0, "seconds"),
    ("hub_timeout", 0.0, 3600.0, "seconds"),
    ("hub_rpm", 0.0, 1_000_000.0, "Hub requests per minute"),
    ("max_download_gb", 0.0, 1_000_000.0, "gigabytes"),
    ("num_cpus", 0.0, 1024.0, "CPUs per model"),
)
# Settings that may be 0 but not negative.
NON_NEGATIVE: tuple[tuple[str, float, str], ...] = (
    ("num_gpus", 64.0, "GPUs per model"),
    ("atol", math.inf, "a tolerance"),
    ("recheck", 100.0, "a percentage of the checks the cache answers"),
)


def flag(name: str) -> str:
    return "--" + name.replace("_", "-")


def check_numbers(cfg: Any) -> None:
    """Raise ``UsageError`` for the first number in ``cfg`` that cannot work."""
    for name, low, high, what in COUNTS:
        value = getattr(cfg, name)
        if value is None:
            continue
        if isinstance(value, bool) or not isinstance(value, int):
            raise UsageError(f"{flag(name)} must be a whole number ({what}), got {value!r}")
        if value < low or (high is not None and value > high):
            kind = "a positive whole number" if low == 1 else f"a whole number from {low:,}"
            most = f", at most {high:,}" if high is not None else ""
            raise UsageError(f"{flag(name)} must be {kind} ({what}{most}), got {_short(value)}")
    for name, low, high, what in REALS:
        value = getattr(cfg, name)
        if value is not None:
            _real(name, value, what, above=low, high=high)
    if cfg.num_cpus < MIN_CPUS:  # a sliver of a CPU would mean thousands of worker slots
        raise UsageError(f"--num-cpus must be at least {MIN_CPUS:g} (CPUs per model), got {cfg.num_cpus:g}")
    for name, high, what in NON_NEGATIVE:
        value = _real(name, getattr(cfg, name), what, above=None, high=high)
        if value < 0:
            raise UsageError(f"{flag(name)} must be 0 or more ({what}), got {value:g}")
    if getattr(cfg, "recheck", 0) and not getattr(cfg, "cache", None):
        raise UsageError("--recheck re-runs checks the cache answers: it needs --cache DIR")


def _real(name: str, value: Any, what: str, *, above: float | None, high: float) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise UsageError(f"{flag(name)} must be a number ({what}), got {value!r}")
    value = float(value)
    if math.isnan(value) or (math.isinf(value) and high != math.inf):
        raise UsageError(f"{flag(name)} must be a finite number ({what}), got {value}")
    if above is not None and value <= above:
        raise UsageError(f"{flag(name)} must be more than {above:g} ({what}), got {value:g}")
    if value > high:
        raise UsageError(f"{flag(name)} must be at most {high:g} ({what}), got {value:g}")
    return value


def _short(value: int) -> str:
    text = str(value)
    return text if len(text) <= 24 else f"{text[:12]}... ({len(text)} digits)"


def check_types(values: dict[str, Any], fields: tuple[dataclasses.Field, ...], *, path: Path, text: str) -> None:
    """Raise ``UsageError`` naming ``path`` and the line when a setting has the wrong type."""
    by_name = {f.name: f for f in fields}
    for name, value in values.items():
        field = by_name.get(name)
        if field is None or _fits(value, field.type):
            continue
        line = _line_of(text, name)
        where = f"{path} line {line}" if line else str(path)
        raise UsageError(f"config file {where}: {name} = {value!r} is not {_describe(field.type)}")


def _line_of(text: str, key: str) -> int | None:
    pattern = re.compile(rf"^\s*[\"']?{re.escape(key)}[\"']?\s*=")
    return next((n for n, line in enumerate(text.splitlines(), 1) if pattern.match(line)), None)


def _kinds(annotation: Any) -> set[type]:
    """The plain types an annotation string (``int | None``) or type admits."""
    if isinstance(annotation, str):
        names = {part.strip().split("[")[0] for part in annotation.split("|")}
        table = {"int": int, "float": float, "str": str, "bool": bool, "None": type(None), "tuple": tuple, "dict": dict, "list": list}
        return {table[n] for n in names if n in table}
    origin = typing.get_origin(annotation)
    if origin in (typing.Union, types.UnionType):
        return set().union(*(_kinds(a) for a in typing.get_args(annotation)))
    return {origin or annotation}


def _fits(value: Any, annotation: Any) -> bool:
    kinds = _kinds(annotation)
    if not kinds:
        return True
    if isinstance(value, bool):
        return bool in kinds
    if isinstance(value, int) and (int in kinds or float in kinds):
        return True
    if isinstance(value, float):
        return float in kinds
    if isinstance(value, (list, tuple)):
        return bool(kinds & {tuple, list})
    if isinstance(value, str) and tuple in kinds:  # "load,forward" for a list of names
        return True
    return any(isinstance(value, k) for k in kinds if k is not type(None)) or (value is None and type(None) in kinds)


def _describe(annotation: Any) -> str:
    kinds = _kinds(annotation) - {type(None)}
    names = {int: "a whole number", float: "a number", str: "a string", bool: "true or false", tuple: "a list", dict: "a table", list: "a list"}
    return " or ".join(sorted({names.get(k, k.__name__) for k in kinds}))
