"""The capability profile: which dtypes, ops and features the simulated chip supports.

A profile is data: the ones sweeper ships lie in the package (``profiles/*.toml``, read
through ``importlib.resources`` so an installed wheel has them; the repo's
``configs/devices`` is a link to that folder). ``load_profile`` takes a shipped profile's
name (``trnsim-tf32``) or a TOML path, validates it against the installed torch (every op
must exist) and hashes its content, so records can say exactly which profile produced them.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from importlib import resources
from importlib.resources.abc import Traversable
from pathlib import Path
from typing import Any, Literal

import tomllib
import torch

from sweeper.devices.precision import EXACT, MANTISSA_BITS, Float32Math
from sweeper.devices.trnsim.errors import ProfileError

Policy = Literal["native", "fallback", "error"]
Mode = Literal["eager", "compile"]
POLICIES: tuple[str, ...] = ("native", "fallback", "error")
FEATURES: tuple[str, ...] = ("dynamic_shapes", "sparse", "nested", "forward_ad", "keeps_parameter_identity")
# A feature a profile does not mention is off, except these. Keeping Parameter identity
# across ``Module.to()`` is what mature PrivateUse1 backends do (torch_npu, torch_mlu
# override ``_has_compatible_shallow_copy_type``); a profile sets it false to model a
# backend without that override.
FEATURE_DEFAULTS: dict[str, bool] = {"keeps_parameter_identity": True}
# The profiles that ship with sweeper: package data, so a wheel installed anywhere has them.
SHIPPED_PROFILES: Traversable = resources.files("sweeper.devices.trnsim") / "profiles"
DEFAULT_PROFILE: Traversable = SHIPPED_PROFILES / "trnsim.toml"


@dataclass(frozen=True)
class Profile:
    """A loaded, validated profile. Op keys are ``aten::name`` or ``aten::name.overload``."""

    name: str
    hash: str
    path: str
    dtypes: frozenset[torch.dtype]
    features: dict[str, bool]
    default: dict[str, Policy]
    eager: dict[str, Policy] = field(default_factory=dict)
    compile: dict[str, Policy] = field(default_factory=dict)
    families: dict[str, str] = field(default_factory=dict)
    # How float32 matmuls and convolutions compute (the profile's [precision] table).
    float32_math: Float32Math = EXACT

    def policy(self, op: str, mode: Mode = "eager") -> Policy:
        """Policy for ``op`` (overload first, then its packet, then the mode's default)."""
        table = self.eager if mode == "eager" else self.compile
        hit = table.get(op)
        if hit is None and "." in op:
            hit = table.get(op.split(".", 1)[0])
        return hit if hit is not None else self.default[mode]

    def allows(self, feature: str) -> bool:
        """Whether a feature flag (``sparse``, ``forward_ad``, ...) is on."""
        return self.features.get(feature, FEATURE_DEFAULTS.get(feature, False))

    def listed_ops(self) -> set[str]:
        """Every op key that has a non-default policy in eager or compile."""
        return set(self.eager) | set(self.compile)

    def info(self) -> dict[str, str]:
        """What records carry about the profile."""
        return {"name": self.name, "hash": self.hash}


def shipped_profiles() -> list[str]:
    """Names of the profiles sweeper ships (``trnsim``, ``trnsim-tf32``, ...)."""
    return sorted(p.name.removesuffix(".toml") for p in SHIPPED_PROFILES.iterdir() if p.name.endswith(".toml"))


def profile_file(path: str | Path | Traversable | None) -> Path | Traversable:
    """Where a profile lies: a shipped profile's name (``trnsim-tf32``), else a TOML path;
    ``None`` is the default profile."""
    if path is None or path == "":
        return DEFAULT_PROFILE
    if isinstance(path, str) and is_shipped_name(path):
        return SHIPPED_PROFILES / f"{path}.toml"
    return path if isinstance(path, Traversable) and not isinstance(path, (str, Path)) else Path(path)


def is_shipped_name(value: str) -> bool:
    """Whether ``value`` names a shipped profile rather than a file (no folder, no suffix)."""
    return "/" not in value and "\\" not in value and not value.endswith(".toml") and value in shipped_profiles()


def load_profile(path: str | Path | Traversable | None = None) -> Profile:
    """Read and validate a profile: a shipped profile's name or a TOML path; ``None`` means
    the default profile."""
    file = profile_file(path)
    try:
        raw = file.read_bytes()
        data = tomllib.loads(raw.decode())
    except FileNotFoundError:
        names = ", ".join(shipped_profiles())
        raise ProfileError(f"device profile not found: {file} (a TOML path, or one of the shipped profiles: {names})") from None
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise ProfileError(f"device profile {file} is not valid TOML: {exc}") from None
    return parse_profile(data, path=str(file), digest=hashlib.sha256(raw).hexdigest()[:16])


def parse_profile(data: dict[str, Any], *, path: str = "<memory>", digest: str = "") -> Profile:
    """Build a ``Profile`` from parsed TOML, raising ``ProfileError`` naming what is wrong."""
    name = data.get("name")
    if not isinstance(name, str) or not name:
        raise ProfileError(f"device profile {path}: needs a `name`")
    dtypes = frozenset(_dtype(d, path) for d in data.get("dtypes", {}).get("supported", ["float32"]))
    features = {f: bool(data.get("features", {}).get(f, FEATURE_DEFAULTS.get(f, False))) for f in FEATURES}
    unknown_features = set(data.get("features", {})) - set(FEATURES)
    if unknown_features:
        raise ProfileError(f"device profile {path}: unknown feature(s) {', '.join(sorted(unknown_features))}")
    defaults = data.get("defaults", {})
    default = {m: _policy(defaults.get(m, "native"), path, f"defaults.{m}") for m in ("eager", "compile")}
    eager: dict[str, Policy] = {}
    comp: dict[str, Policy] = {}
    families: dict[str, str] = {}
    for group in data.get("ops", []):
        family = str(group.get("family", "ops"))
        for raw_name in group.get("names", []):
            key = op_key(raw_name, path)
            eager[key] = _policy(group.get("eager", default["eager"]), path, key)
            comp[key] = _policy(group.get("compile", default["compile"]), path, key)
            families[key] = family
    return Profile(name, digest or hashlib.sha256(repr(data).encode()).hexdigest()[:16], path,
                   dtypes, features, default, eager, comp, families, _float32_math(data, name, path))


def _float32_math(data: dict[str, Any], name: str, path: str) -> Float32Math:
    """The ``[precision]`` table: ``float32_matmul`` and ``float32_conv``, each ``ieee``
    (exact float32, the default), ``tf32`` or ``bf16``."""
    table = data.get("precision", {})
    unknown = set(table) - {"float32_matmul", "float32_conv"}
    if unknown:
        raise ProfileError(f"device profile {path}: unknown precision key(s) {', '.join(sorted(unknown))}")
    for key in ("float32_matmul", "float32_conv"):
        if table.get(key, "ieee") not in MANTISSA_BITS:
            raise ProfileError(f"device profile {path}: precision.{key} must be one of {', '.join(MANTISSA_BITS)}")
    if not table:
        return Float32Math(source=f"profile {name}")
    return Float32Math(matmul=table.get("float32_matmul", "ieee"), conv=table.get("float32_conv", "ieee"),
                       source=f"profile {name}")


def op_key(raw: str, path: str = "<memory>") -> str:
    """Normalise an op name to ``aten::name[.overload]``, checking torch knows it."""
    name = raw.split("::", 1)[1] if "::" in raw else raw
    packet_name, _, overload = name.partition(".")
    packet = getattr(torch.ops.aten, packet_name, None) if packet_name else None
    if packet is None or not hasattr(packet, "overloads"):
        raise ProfileError(f"device profile {path}: torch {torch.__version__} has no op {raw!r}")
    if overload and overload not in packet.overloads():
        raise ProfileError(f"device profile {path}: op {raw!r} has no overload {overload!r}")
    return f"aten::{name}"


def _policy(value: Any, path: str, where: str) -> Policy:
    if value not in POLICIES:
        raise ProfileError(f"device profile {path}: {where}: policy {value!r} is not one of {', '.join(POLICIES)}")
    return value


def _dtype(value: str, path: str) -> torch.dtype:
    dt = getattr(torch, str(value), None)
    if not isinstance(dt, torch.dtype):
        raise ProfileError(f"device profile {path}: unknown dtype {value!r}")
    return dt
