"""Versions that go into every record and sweep.json, and the packages each library's
checks depend on (what the check fingerprint carries per model)."""

from __future__ import annotations

import functools
import platform
from typing import Any

import sweeper
from sweeper.libraries.base import package_version

# The packages whose versions can change the outcome of a model of each library: an
# upgrade of one re-runs only the checks of the libraries listed with it. The empty
# library (a listing that does not say) is built by transformers.
HUB_STACK = ("transformers", "huggingface_hub", "tokenizers", "safetensors")
LIBRARY_PACKAGES: dict[str, tuple[str, ...]] = {
    "": HUB_STACK,
    "transformers": HUB_STACK,
    "sentence-transformers": (*HUB_STACK, "sentence-transformers"),
    "peft": (*HUB_STACK, "peft"),
    "timm": ("timm", "torchvision", "huggingface_hub", "safetensors"),
    "open_clip": ("open_clip_torch", "timm", "torchvision", "huggingface_hub", "safetensors"),
    "diffusers": ("diffusers", *HUB_STACK),
    "pyannote-audio": ("pyannote.audio", "torchaudio", "lightning"),
    "vocos": ("vocos", "encodec", "torchaudio"),
    "speechbrain": ("speechbrain", "torchaudio"),
}


def library_packages(library: str | None) -> tuple[str, ...]:
    """The packages whose versions decide the checks of ``library``'s models: the table's
    entry, else the library's own name (absent when not installed)."""
    return LIBRARY_PACKAGES.get(library or "", (library or "",))


def library_versions(library: str | None) -> dict[str, str]:
    """``{package: version}`` for what ``library``'s models depend on."""
    return {name: package_version(name) for name in library_packages(library)}


@functools.lru_cache(maxsize=1)
def _package_versions() -> dict[str, str]:
    found = {"sweeper": sweeper.__version__, "python": platform.python_version()}
    for name in ("torch", "transformers", "huggingface_hub"):
        found[name] = package_version(name)
    return found


def versions(device: Any = None) -> dict[str, str]:
    """Package versions plus, when the device has them, its profile's name and hash and the
    versions of the tools that decide its verdicts (trnsim: the lowering tool)."""
    found = dict(_package_versions())
    if device is not None:
        profile = device.profile_info()
        if profile:
            found["device_profile"] = f"{profile.get('name', '?')}@{profile.get('hash', '?')}"
        found.update(device.tool_versions())
    return found
