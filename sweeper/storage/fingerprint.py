"""The fingerprint of a check: a hash of everything that decides its outcome.

Two refs with the same fingerprint build the same model (same materialised config, same
head class, same inputs, same weights and seed) and run the same stages on the same device
with the same libraries, so one check answers for both. It is computed in the driver from
the ref and the settings alone (no torch, no transformers import), in three parts:

- **model**: where the config comes from and its canonical JSON hash (the ref's own config,
  a config.json in the local Hub cache, or the model type's default), the model type, the
  head-class inputs (``ref.architecture``, the config's ``architectures``, the head
  mappings the ``pipeline_tag`` asks for) and whether the library is supported;
- **settings**: every setting (``SweepConfig.to_dict``) except those that only say *which* models run
  or *how* they are scheduled (``NOT_OUTCOME``), a new field counts by default;
- **environment**: torch, Python and sweeper versions, a digest of sweeper's own source and
  the device profile's name and content hash for every model, plus the versions of only the
  packages the ref's library uses (``sweeper.checks.versions.LIBRARY_PACKAGES``): upgrading timm
  re-runs the timm models' checks and no others.

A ref whose config would be fetched from a reachable Hub, or whose weights are pretrained,
cannot be known in advance: its model part names the repo and revision, so it shares with
no other model (and is cached across sweeps only when the revision is pinned).
"""

from __future__ import annotations

import functools
import hashlib
import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sweeper.records import ModelRef

if TYPE_CHECKING:
    from sweeper.settings.config import SweepConfig

FINGERPRINT_VERSION = 3  # 2: library versions per ref, not one set for everyone; 3: the library registry
# Settings that choose or schedule models but never change one model's outcome.
NOT_OUTCOME = frozenset(
    {
        "top", "source", "catalog", "executor", "out", "workers", "address", "retries", "worker_max_models",
        "max_in_flight", "hub_timeout", "hub_limit", "hub_backoff_s", "tasks", "libraries", "model_types", "include",
        "exclude",
        "num_gpus", "reuse", "cache", "recheck",
        # The profile's file path is replaced by its content hash (environment part).
        "device_profile",
    }
)  # fmt: skip


def digest(value: Any) -> str:
    """SHA-256 of ``value``'s canonical JSON (sorted keys, no whitespace)."""
    text = json.dumps(value, sort_keys=True, separators=(",", ":"), default=str, ensure_ascii=True)
    return hashlib.sha256(text.encode()).hexdigest()


@functools.lru_cache(maxsize=1)
def source_digest() -> str:
    """A digest of sweeper's own Python files: a code change is a new check even when the
    version number stays the same."""
    root = Path(__file__).resolve().parent.parent
    h = hashlib.sha256()
    for path in sorted(root.rglob("*.py")):
        h.update(str(path.relative_to(root)).encode())
        h.update(path.read_bytes())
    return h.hexdigest()[:16]


def environment(device_info: dict[str, Any]) -> dict[str, Any]:
    """What every check shares: torch and Python versions, sweeper's version and source
    digest, and the device profile (library versions are per ref: ``library_versions``)."""
    import platform

    import sweeper
    from sweeper.checks.versions import package_version

    profile = device_info.get("profile") or {}
    return {
        "versions": {"torch": package_version("torch"), "python": platform.python_version(), "sweeper": sweeper.__version__},
        "sweeper_source": source_digest(),
        "device_profile": f"{profile.get('name')}@{profile.get('hash')}" if profile else None,
    }


def settings(cfg: SweepConfig) -> dict[str, Any]:
    """The settings that decide one model's outcome (stages normalised to the run set)."""
    from sweeper.records import Stage

    data = {k: v for k, v in cfg.to_dict().items() if k not in NOT_OUTCOME}
    data["stages"] = sorted({s.value for s in Stage if s.value in cfg.check.stages})
    return data


def hub_cached_config(ref: ModelRef) -> dict[str, Any] | None:
    """The repo's config.json from the local Hub cache (what an offline fetch reads), or None."""
    try:
        from huggingface_hub import try_to_load_from_cache

        path = try_to_load_from_cache(ref.model_id, "config.json", revision=ref.revision)
    except Exception:  # noqa: BLE001 - an unusable cache is the same as none
        return None
    if not isinstance(path, str):
        return None
    try:
        return {"sha": hashlib.sha256(Path(path).read_bytes()).hexdigest()}
    except OSError:
        return None


def config_origin(ref: ModelRef, cfg: SweepConfig, *, offline: bool) -> tuple[Any, ...]:
    """Where the check's config comes from, as ``materialize.build.config_data`` decides."""
    if cfg.materialise.weights == "pretrained":
        return ("repo", ref.model_id, ref.revision)
    if ref.config is not None:
        return ("ref", digest(ref.config))
    from sweeper.libraries.transformers.default_config import names_default_config

    from_hub = ref.source not in (None, "zoo") and not names_default_config(ref.model_id)
    if not from_hub:
        return ("default",)
    if not offline:
        return ("repo", ref.model_id, ref.revision)
    cached = hub_cached_config(ref)
    if cached is not None:
        return ("hub-cache", cached["sha"])
    # Offline and not cached: the type's default, or the same download error for every
    # such model (a copy names its own model: ``reuse.copy_for``).
    return ("default-offline",) if ref.model_type else ("offline-missing",)


def model_part(ref: ModelRef, cfg: SweepConfig, *, offline: bool) -> dict[str, Any]:
    """What decides the model built and its inputs (see the module docstring). A repo whose
    id names a quantization method is built with it: never the same check as the float
    repos of its architecture (nor as another method's)."""
    from sweeper.libraries.quantization import from_id

    part = _model_part(ref, cfg, offline=offline)
    quantized = from_id(ref.model_id) if "not_pytorch" not in part else None
    if quantized is not None:
        part = {**part, "quantization": [quantized["method"], quantized["bits"], quantized["format"]]}
    return part


def _model_part(ref: ModelRef, cfg: SweepConfig, *, offline: bool) -> dict[str, Any]:
    from sweeper.libraries.formats import not_pytorch
    from sweeper.libraries.registry import supported_names
    from sweeper.libraries.transformers.heads import TASK_HEADS

    library = ref.library_name or ""
    fmt = not_pytorch(ref)
    if fmt is not None:  # named by its format before any library is asked
        return {"not_pytorch": str(fmt)}
    if _builds_from_id(ref):
        # Other libraries build from the id (timm, open_clip, diffusers name tables): one check
        # per repo, unless the library says what the build depends on (diffusers' components,
        # pyannote's models) and repos share it; pretrained weights are the repo's at its revision.
        pretrained = cfg.materialise.weights == "pretrained"
        from sweeper.libraries.registry import library_for

        owner = library_for(ref)
        wrapped = None if pretrained else owner.wraps(ref)
        if wrapped is not None:  # e.g. a peft adapter: its base's part, plus the adapter's settings
            return {"library": ref.library_name, "base": model_part(wrapped, cfg, offline=offline), "settings": digest(ref.config)}
        same = None if pretrained else owner.same_build(ref)
        if same is not None:
            return {"library": ref.library_name, "builds": same}
        return {"library": ref.library_name, "model_id": ref.model_id, "config": digest(ref.config),
                "revision": ref.revision if pretrained else None}
    if library not in supported_names():
        # The check stops at the library before anything else: its name is the outcome.
        return {"unsupported_library": library}
    origin = config_origin(ref, cfg, offline=offline)
    config = ref.config if origin[0] == "ref" else None
    model_type = ((config or {}).get("model_type") if isinstance(config, dict) else None) or ref.model_type
    part = {
        "config": list(origin),
        "model_type": model_type,
        "architecture": ref.architecture,
        "config_architectures": (config or {}).get("architectures") if isinstance(config, dict) else None,
        # head_for_task reads the tag only through this table: tags asking for the same
        # mappings choose the same head.
        "task_heads": list(TASK_HEADS.get(ref.pipeline_tag or "", ())),
    }
    if library == "sentence-transformers":
        # Offline the pooling comes from the id (a name table): same type, other pooling.
        from sweeper.libraries.sentence_transformers.layout import from_name

        named = from_name(ref.model_id)
        part["sentence_layout"] = None if named is None else [list(named.pooling), named.normalize]
    return part


def _builds_from_id(ref: ModelRef) -> bool:
    """Whether a library other than transformers builds ``ref`` (from its id, not a config)."""
    from sweeper.libraries.registry import library_for, supported_names

    return (ref.library_name or "") in supported_names() and library_for(ref).name not in ("transformers", "sentence-transformers")


class Fingerprinter:
    """Fingerprints for one sweep: the settings and environment parts are hashed once."""

    def __init__(self, cfg: SweepConfig, device_info: dict[str, Any], *, offline: bool | None = None) -> None:
        self.cfg = cfg
        if offline is None:
            from sweeper.hub.access import hub_offline

            offline = hub_offline()
        self.offline = offline
        self._settings = digest(settings(cfg))
        self._environment = digest(environment(device_info))
        self.common = digest({"v": FINGERPRINT_VERSION, "settings": self._settings, "env": self._environment})
        self._library: dict[str, str] = {}  # library -> digest of its packages' versions

    def __call__(self, ref: ModelRef) -> str:
        """The fingerprint of ``ref``'s check (hex, 32 characters)."""
        part = model_part(ref, self.cfg, offline=self.offline)
        return digest({"common": self.common, "library": self._library_digest(ref), "model": part})[:32]

    def parts(self, ref: ModelRef) -> dict[str, str]:
        """Short digests of the fingerprint's parts (``settings``, ``environment``,
        ``library`` versions, ``model``): kept in the record, so ``sweep diff`` can say
        which part made a model's check run again."""
        model = digest(model_part(ref, self.cfg, offline=self.offline))
        return {
            "settings": self._settings[:8], "environment": self._environment[:8],
            "library": self._library_digest(ref)[:8], "model": model[:8],
        }  # fmt: skip

    def _library_digest(self, ref: ModelRef) -> str:
        from sweeper.libraries.registry import library_name_of

        library = library_name_of(ref) or ""
        if library not in self._library:
            from sweeper.checks.versions import library_versions

            self._library[library] = digest(library_versions(library))
        return self._library[library]

    def cacheable(self, ref: ModelRef) -> bool:
        """Whether the fingerprint pins the config: a repo fetched at a moving revision does not."""
        from sweeper.libraries.formats import not_pytorch
        from sweeper.libraries.registry import supported_names

        if not_pytorch(ref) is not None or (ref.library_name or "") not in supported_names():
            return True  # the outcome is the format's or the library's name alone
        if _builds_from_id(ref):
            return self.cfg.materialise.weights != "pretrained" or bool(ref.revision)
        origin = config_origin(ref, self.cfg, offline=self.offline)
        # ``offline-missing`` is cacheable: a config in the Hub cache tomorrow, or a Hub
        # that answers, is another origin, hence another fingerprint.
        return not (origin[0] == "repo" and not origin[2])
