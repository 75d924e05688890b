"""sweep.json, read leniently: any key may be absent (a sweep killed half-way has no
"ended"), and a section of the wrong shape is dropped rather than trusted."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from sweeper.errors import UsageError

SWEEP_FILE = "sweep.json"


def read_meta(out_dir: Path) -> dict[str, Any]:
    """``sweep.json`` as a dict; empty when absent (any key may be missing)."""
    path = Path(out_dir) / SWEEP_FILE
    if not path.is_file():
        return {}
    try:
        meta = json.loads(path.read_text(encoding="utf-8"))
    except ValueError as exc:
        raise UsageError(f"{path} is not valid JSON: {exc}") from None
    return normalise_meta(meta if isinstance(meta, dict) else {})


def normalise_meta(meta: dict[str, Any]) -> dict[str, Any]:
    """Give sweep.json's sections the shapes reports read (a hand-edited or older file may
    hold a string where a table belongs); drop values that cannot be used."""
    meta = dict(meta)
    if isinstance(meta.get("device"), str):
        meta["device"] = {"spec": meta["device"]}
    for name in ("config", "source", "device", "versions"):
        if name in meta and not isinstance(meta[name], dict):
            del meta[name]
    device = meta.get("device")
    if device and not isinstance(device.get("profile"), (dict, type(None))):
        meta["device"] = {k: v for k, v in device.items() if k != "profile"}
    stages = (meta.get("config") or {}).get("stages")
    if stages is not None and not (isinstance(stages, list) and all(isinstance(x, str) for x in stages)):
        meta["config"] = {k: v for k, v in meta["config"].items() if k != "stages"}
    if not isinstance(meta.get("wall_seconds"), (int, float)):
        meta.pop("wall_seconds", None)
    return meta
