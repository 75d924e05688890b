"""The device plug point: what a device string needs, and a registry of them.

A ``Device`` wraps a torch device string with what the sweep needs around it: set-up
(import a plugin, register a backend), the compile backend to use, op recording and
fallback counts, memory statistics and the capability profile that goes into records.

Devices register with ``@register_device("name")``; third-party packages add theirs with
an entry point in the ``sweeper.devices`` group whose object is such a factory.
"""

from __future__ import annotations

import contextlib
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from importlib import metadata
from typing import Any

from sweeper.errors import UsageError
from sweeper.records import Reason


@dataclass
class Recording:
    """What a device saw inside a ``recording()`` block."""

    ops: Counter = field(default_factory=Counter)
    fallback_ops: Counter = field(default_factory=Counter)
    errors: list[str] = field(default_factory=list)
    # Blockers seen but not raised (collect-all mode): the device ran on regardless.
    blockers: list[Reason] = field(default_factory=list)
    # Compiler findings that did not stop compilation (lowering failures, refusals).
    compile_problems: list[str] = field(default_factory=list)


class Device:
    """A torch device string plus what the sweep needs to use it.

    Subclasses override what differs; the defaults suit any device torch knows natively.
    """

    #: registry name (``cpu``, ``cuda``, ``trnsim``)
    name: str = "cpu"
    #: one line for ``sweep devices``
    description: str = ""
    #: what a user must install or have for it to work
    needs: str = ""

    def __init__(self, spec: str, **options: Any) -> None:
        # Options every device receives (devices ignore those they do not use):
        # profile (path or None), collect_all (bool), out_dir (the sweep's output folder,
        # where a device may leave artifacts such as compiler reproducers).
        self.spec = spec
        self.options = options

    @property
    def torch_device(self) -> str:
        """The string handed to ``tensor.to(...)``."""
        return self.spec

    @property
    def compile_backend(self) -> str:
        """The ``torch.compile`` backend used unless ``--compile-backend`` names another."""
        return "inductor"

    def available(self) -> tuple[bool, str]:
        """Whether this process can use the device, and why not."""
        return True, ""

    def setup(self) -> None:
        """Prepare the process (import plugins, register backends); idempotent."""

    def warm_up(self) -> None:
        """Pay once, before the first model, what every process pays on first use (imports,
        compiler set-up), so no model's stage is charged for it; leaves no state behind."""

    def synchronize(self) -> None:
        """Wait for queued work (no-op where execution is synchronous)."""

    def reset_peak_memory(self) -> None:
        """Start a fresh peak-memory window."""

    def peak_memory_bytes(self) -> int | None:
        """Peak device memory since the last reset, when the device can tell."""
        return None

    @contextlib.contextmanager
    def recording(self) -> Iterator[Recording]:
        """Record ops and host fallbacks run inside the block (empty where unsupported)."""
        yield Recording()

    def profile_info(self) -> dict[str, str]:
        """Name and content hash of the capability profile (empty for plain devices)."""
        return {}

    def reset_between_models(self) -> None:
        """Clear state one model could leak into the next (caches, counters)."""


DeviceFactory = Callable[..., Device]
_REGISTRY: dict[str, type[Device] | DeviceFactory] = {}
_ENTRY_POINTS_LOADED = False


def register_device(name: str) -> Callable[[Any], Any]:
    """Class/factory decorator adding a device under ``name`` (the part before ``:``)."""

    def wrap(factory: Any) -> Any:
        _REGISTRY[name] = factory
        return factory

    return wrap


def _load_entry_points() -> None:
    global _ENTRY_POINTS_LOADED
    if _ENTRY_POINTS_LOADED:
        return
    _ENTRY_POINTS_LOADED = True
    for ep in metadata.entry_points(group="sweeper.devices"):
        try:
            _REGISTRY.setdefault(ep.name, ep.load())
        except Exception:  # a broken plugin must not break the other devices
            continue


def _load_builtin() -> None:
    # Imported for their registrations; kept lazy so `import sweeper` stays light.
    from sweeper.devices import torch_device  # noqa: F401

    with contextlib.suppress(ImportError):
        from sweeper.devices import trnsim_entry  # noqa: F401


def known_devices() -> dict[str, type[Device] | DeviceFactory]:
    """All registered device names and their factories."""
    _load_builtin()
    _load_entry_points()
    return dict(sorted(_REGISTRY.items()))


def get_device(spec: str, **options: Any) -> Device:
    """Build the device for ``spec`` (``cpu``, ``cuda:1``, ``trnsim``) or raise UsageError."""
    base = spec.split(":", 1)[0].strip().lower()
    registry = known_devices()
    if base not in registry:
        raise UsageError(f"unknown device {spec!r}; known devices: {', '.join(registry)} (see `sweep devices`)")
    return registry[base](spec, **options)
