"""``DeviceSpec``: the sweep's device, resolved once in planning and shipped to workers.

The device string is parsed here and nowhere else (name, index); planning builds the
device once to check it is usable here and to read what records carry (its kind, its
capability profile's name and hash, whether it needs a GPU per model). Workers build
their ``Device`` from the spec (``build``) instead of from the raw settings.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from sweeper.settings.errors import UsageError

if TYPE_CHECKING:
    from sweeper.devices.base import Device
    from sweeper.settings.config import SweepConfig


@dataclass(frozen=True)
class DeviceSpec:
    """Everything about the sweep's device a worker needs; frozen and picklable."""

    spec: str  # as the user gave it: cpu, cuda:1, trnsim
    name: str  # the registry name (the part before ``:``)
    index: int | None  # cuda:1 -> 1
    kind: str  # torch | trnsim (``Device.kind``)
    profile: str | None  # the capability profile's path, None = the device's default
    profile_info: dict[str, str] = field(default_factory=dict)  # its name and content hash
    tool_versions: dict[str, str] = field(default_factory=dict)  # its compiler's / lowering tool's version
    compile_backend: str | None = None  # --compile-backend; None = the device's own
    dtype: str = "float32"
    collect_all: bool = False
    retie_weights: bool = False
    gpus: bool = False  # each model needs a GPU of its own
    out_dir: str | None = None  # where the device may leave artifacts (reproducers)
    strict_float32: bool = False  # exact float32 matmuls and convolutions (no TF32)
    float32_math: dict[str, Any] = field(default_factory=dict)  # the device's declared math, as planning read it
    shared_cache: str | None = None  # compiler verdicts shared by the sweep's workers (and sweeps, with --cache)

    def options(self) -> dict[str, Any]:
        """The options ``get_device`` hands the device's factory."""
        return {"profile": self.profile, "collect_all": self.collect_all, "out_dir": self.out_dir,
                "strict_float32": self.strict_float32, "shared_cache": self.shared_cache}

    def build(self) -> Device:
        """A new ``Device`` for this spec (not yet set up)."""
        from sweeper.devices.base import get_device

        return get_device(self.spec, **self.options())

    def info(self) -> dict[str, Any]:
        """What ``sweep.json`` and check fingerprints say about the device."""
        info = {"spec": self.spec, "profile": dict(self.profile_info), "float32_math": dict(self.float32_math)}
        if self.tool_versions:  # a new lowering tool re-runs the checks it judged
            info["tools"] = dict(self.tool_versions)
        return info


def parse(spec: str) -> tuple[str, int | None]:
    """``cuda:1`` -> ``("cuda", 1)``; ``trnsim`` -> ``("trnsim", None)``; UsageError otherwise."""
    name, sep, index = spec.strip().partition(":")
    name = name.strip().lower()
    if not name:
        raise UsageError(f"device {spec!r} names no device (e.g. cpu, cuda:0, trnsim)")
    if not sep:
        return name, None
    if not index.strip().isdigit():
        raise UsageError(f"device {spec!r}: the index after ':' must be a whole number, got {index!r}")
    return name, int(index)


def resolve_device(cfg: SweepConfig, *, out_dir: str | None = None) -> tuple[DeviceSpec, Device]:
    """The spec for ``cfg.device`` and the device built from it; UsageError when the name
    is unknown, the index malformed or the device not usable in this process."""
    from sweeper.devices.base import device_factory

    dev = cfg.device
    name, index = parse(dev.spec)
    factory = device_factory(name)
    device = factory(dev.spec, profile=dev.profile, collect_all=dev.collect_all, out_dir=out_dir,
                     strict_float32=dev.strict_float32)
    ok, why = device.available()
    if not ok:
        raise UsageError(f"device {dev.spec!r} is not usable here: {why}")
    spec = DeviceSpec(
        spec=dev.spec, name=name, index=index, kind=device.kind, profile=dev.profile,
        profile_info=dict(device.profile_info()), tool_versions=dict(device.tool_versions()),
        compile_backend=dev.compile_backend, dtype=dev.dtype,
        collect_all=dev.collect_all, retie_weights=dev.retie_weights, gpus=device.gpus, out_dir=out_dir,
        strict_float32=dev.strict_float32, float32_math=_declared_math(device),
        shared_cache=shared_cache(cfg, out_dir),
    )
    return spec, device


# Where a device keeps compiler verdicts its workers share: in the sweep's folder (hidden,
# never published), or under ``--cache`` so the next sweep starts from them.
SHARED_IN_FOLDER = ".compiler-verdicts"
SHARED_IN_CACHE = "compiler-verdicts"


def shared_cache(cfg: SweepConfig, out_dir: str | None) -> str | None:
    """The folder of compiler verdicts shared by this sweep's workers: ``--cache``'s
    ``compiler-verdicts/`` (across sweeps), else the output folder's own, else none."""
    import os

    cache = getattr(cfg.output, "cache", None)
    if cache:
        return os.path.join(str(cache), SHARED_IN_CACHE)
    return os.path.join(out_dir, SHARED_IN_FOLDER) if out_dir else None


def _declared_math(device: Device) -> dict[str, Any]:
    """The device's float32 math as planning reads it (a device that cannot tell yet, such
    as a GPU not set up, is read again by each worker: records carry their own)."""
    try:
        return device.float32_math().to_dict()
    except Exception:  # noqa: BLE001 - informational: each record states the math it ran under
        return {}
