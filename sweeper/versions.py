"""Versions that go into every record and sweep.json."""

from __future__ import annotations

import functools
import platform
from importlib import metadata
from typing import Any

import sweeper


@functools.lru_cache(maxsize=1)
def _package_versions() -> dict[str, str]:
    found = {"sweeper": sweeper.__version__, "python": platform.python_version()}
    for name in ("torch", "transformers", "huggingface_hub"):
        try:
            found[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            found[name] = "absent"
    return found


def versions(device: Any = None) -> dict[str, str]:
    """Package versions plus the device profile's name and hash, when the device has one."""
    found = dict(_package_versions())
    if device is not None:
        profile = device.profile_info()
        if profile:
            found["device_profile"] = f"{profile.get('name', '?')}@{profile.get('hash', '?')}"
    return found
