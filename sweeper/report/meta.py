"""The sweep's identity as report.md and index.html show it, from ``SweepMeta``.

Both outputs show the same rows in the same words; each only escapes them its own way.
"""

from __future__ import annotations

from typing import Any

import pandas as pd

from sweeper.report.escape import seconds
from sweeper.storage.sweep_meta import SweepMeta

CODE_ROWS = frozenset({"sweep", "device"})  # values report.md sets as code


def device_name(meta: SweepMeta, models: pd.DataFrame) -> str:
    """The device spec from sweep.json, else the one the records name."""
    if meta.device_spec:
        return meta.device_spec
    devices = models["device"].dropna()
    return str(devices.iloc[0]) if len(devices) else "unknown device"


def source_label(source: dict[str, Any] | None) -> str:
    """The source's name, with the catalog file's name (never its local folder)."""
    source = source or {}
    name = str(source.get("name") or "unknown")
    path = str(source.get("path") or "")
    return f"{name} ({path.replace(chr(92), '/').rsplit('/', 1)[-1]})" if path else name


def all_versions(meta: SweepMeta, models: pd.DataFrame) -> dict[str, list[str]]:
    """Every package version that decided a verdict: sweep.json's and each record's (the
    device's tools, the packages of each driven library), each package's versions sorted."""
    found: dict[str, set[str]] = {}
    for name, version in (meta.versions or {}).items():
        found.setdefault(str(name), set()).add(str(version))
    column = models["versions"] if "versions" in models.columns else pd.Series(dtype=object)
    for text in column.dropna().unique():
        for part in str(text).split("; "):
            name, _, version = part.partition(" ")
            found.setdefault(name, set()).add(version)
    found.pop("device_profile", None)  # the profile has its own row
    return {name: sorted(v) for name, v in sorted(found.items())}


def math_row(meta: SweepMeta, models: pd.DataFrame) -> tuple[str, str]:
    """The math the figures were judged in: a float32 sweep's declared float32 math; another
    dtype's sweep says its dtype runs as itself and where the float32 math still applies."""
    dtype = meta.setting("dtype") or _single(models, "dtype") or "float32"
    declared = _single(models, "precision") or "—"
    if dtype == "float32":
        return "float32 math", declared
    return f"{dtype} math", (f"{dtype} weights and activations, compared with the CPU in {dtype}; the float32 ops "
                             f"the model keeps: {declared}")


def identity_rows(meta: SweepMeta, models: pd.DataFrame) -> list[tuple[str, str]]:
    """(label, plain text) rows: sweep, date, device, profile, source, snapshot, weights,
    dtype, math, versions, wall time. Weights and dtype fall back on what the records say."""
    profile = meta.profile
    versions = all_versions(meta, models)
    return [
        ("sweep", meta.sweep_id or "unknown"),
        ("date", (meta.started or "")[:10] or "unknown"),
        ("device", device_name(meta, models)),
        ("device profile", f"{profile.get('name')} ({profile.get('hash')})" if profile else "—"),
        ("source", source_label(meta.source)),
        ("snapshot date", (meta.source or {}).get("snapshot_date") or "—"),
        ("weights", meta.setting("weights") or _single(models, "weights") or "—"),
        ("dtype", meta.setting("dtype") or _single(models, "dtype") or "—"),
        math_row(meta, models),
        ("versions", ", ".join(f"{k} {' / '.join(v)}" for k, v in versions.items()) or "—"),
        ("wall time", seconds(meta.wall_seconds)),
    ]


def _single(models: pd.DataFrame, column: str) -> str | None:
    """The values one column of the records takes, joined (None when it takes none)."""
    values = sorted(models[column].dropna().astype(str).unique())
    return ", ".join(values) if values else None
