"""The device plug point: what a device string needs, and a registry of them.

A ``Device`` wraps a torch device string with what the sweep needs around it: set-up
(import a plugin, register a backend), the compile backend to use, op recording and
fallback counts, memory statistics and the capability profile that goes into records.

The built-in devices are named in ``BUILTIN`` (``"module:attr"``, imported when used);
third-party packages add theirs with an entry point in the ``sweeper.devices`` group whose
object is a factory ``(spec, **options) -> Device``, or register one in-process with
``@register_device("name")``.
"""

from __future__ import annotations

import contextlib
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from importlib import metadata
from typing import Any

from sweeper.devices.precision import EXACT, Float32Math, strictly
from sweeper.records import Reason
from sweeper.settings.errors import UsageError
from sweeper.settings.plugins import resolve

# The folder under ``out_dir`` (a device's option: the sweep's folder) where a device leaves
# standalone reproducers. Named here so a device can reach it without the storage layer
# above it; ``storage.folder`` lists it with the sweep folder's other files.
REPROS = "repros"
# On the command line of a long-lived helper process a device starts (trnsim's lowering
# server): memory it holds between jobs is the device runtime's, bounded by the helper's own
# limits, not the model's, so a worker's --memory-limit-mb leaves such processes out.
HELPER_PROCESS_MARK = "sweeper-device-helper"


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
    #: how it is reached: ``torch`` (a device torch knows) or the simulator's ``trnsim``
    kind: str = "torch"
    #: whether each model needs a GPU of its own (executors reserve one per model)
    gpus: bool = False

    def __init__(self, spec: str, **options: Any) -> None:
        # Options every device receives (devices ignore those they do not use):
        # profile (path or None), collect_all (bool), out_dir (the sweep's output folder,
        # where a device may leave artifacts such as compiler reproducers), strict_float32
        # (bool: exact float32 matmuls and convolutions, no TF32), shared_cache (a folder
        # whose compiler verdicts every worker of the sweep, or every sweep, may reuse).
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

    def tool_versions(self) -> dict[str, str]:
        """``{package: version}`` of the tools outside torch whose behaviour decides the
        device's verdicts (its compiler or lowering tool); empty for plain devices."""
        return {}

    def float32_math(self) -> Float32Math:
        """How the device computes float32 matmuls and convolutions, as it declares it:
        exact float32 unless it says otherwise (a plugin whose chip reads float32 inputs
        as TF32 overrides this). Numerics allows a device the error its math implies."""
        return strictly(EXACT) if self.options.get("strict_float32") else EXACT

    def accepts_symbolic_shapes(self) -> bool | None:
        """Whether the device's compiler takes graphs with symbolic shapes, as it declares
        it: None when it does not say (the shapes stage then tries ``dynamic=True``)."""
        return None

    @contextlib.contextmanager
    def new_shapes(self) -> Iterator[None]:
        """The block recompiles a model's graphs at new input shapes (the shapes stage); a
        device whose verdict on a graph cannot change with its sizes may spare the work."""
        yield

    def compile_phases(self) -> dict[str, float]:
        """Seconds the device's compiler has spent so far in this process, by phase, as it
        keeps them (empty when it keeps none; ``checks.compile_time`` takes differences).
        A phase named ``aot`` is AOT autograd's own tracing inside the backend."""
        return {}

    def reset_between_models(self) -> None:
        """Clear state one model could leak into the next (caches, counters)."""


DeviceFactory = Callable[..., Device]
# Built-in devices, named rather than imported: a module is imported when its device is used.
BUILTIN: dict[str, str] = {
    "cpu": "sweeper.devices.torch_device:CpuDevice",
    "cuda": "sweeper.devices.torch_device:CudaDevice",
    "mps": "sweeper.devices.torch_device:MpsDevice",
    "xpu": "sweeper.devices.torch_device:XpuDevice",
    "hpu": "sweeper.devices.torch_device:HpuDevice",
    "neuron": "sweeper.devices.torch_device:NeuronDevice",
    "xla": "sweeper.devices.torch_device:XlaDevice",
    "trnsim": "sweeper.devices.trnsim.device:TrnsimDevice",
}
_REGISTRY: dict[str, type[Device] | DeviceFactory | str] = dict(BUILTIN)
_ENTRY_POINTS_LOADED = False


def register_device(name: str) -> Callable[[Any], Any]:
    """Class/factory decorator adding a device under ``name`` (the part before ``:``)."""

    def wrap(factory: Any) -> Any:
        _REGISTRY[name] = factory
        return factory

    return wrap


def _load_entry_points() -> None:
    """Plugins' devices: entry points in the ``sweeper.devices`` group, loaded when used."""
    global _ENTRY_POINTS_LOADED
    if _ENTRY_POINTS_LOADED:
        return
    _ENTRY_POINTS_LOADED = True
    for ep in metadata.entry_points(group="sweeper.devices"):
        _REGISTRY.setdefault(ep.name, ep.value)


def known_devices() -> dict[str, type[Device] | DeviceFactory | str]:
    """All registered device names and their factories (or ``"module:attr"`` names of them)."""
    _load_entry_points()
    return dict(sorted(_REGISTRY.items()))


def device_factory(name: str) -> type[Device] | DeviceFactory:
    """The factory registered as ``name``, imported now; UsageError for an unknown name."""
    registry = known_devices()
    if name not in registry:
        raise UsageError(f"unknown device {name!r}; known devices: {', '.join(registry)} (see `sweep devices`)")
    try:
        factory = resolve(registry[name])
    except (ImportError, AttributeError) as exc:  # a plugin that is not (or badly) installed
        raise UsageError(f"device {name!r} cannot be loaded: {type(exc).__name__}: {exc}") from None
    _REGISTRY[name] = factory
    return factory


def get_device(spec: str, **options: Any) -> Device:
    """Build the device for ``spec`` (``cpu``, ``cuda:1``, ``trnsim``) or raise UsageError."""
    return device_factory(spec.split(":", 1)[0].strip().lower())(spec, **options)
