"""The sweep's settings: one frozen ``SweepConfig`` made of typed sections.

    cfg.source       which models: the source, catalog, --top, filters, Hub access
    cfg.materialise  how a model is built: weights, sizes, seed, trust in remote code
    cfg.device       where it runs: the device string, its profile, dtype, compile backend
    cfg.check        what it goes through: the stages, the numerics tolerance
    cfg.execution    how models are scheduled: executor, workers, timeouts, memory
    cfg.output       where results go: the output folder, reuse of checks, the cache

Settings files and flags use flat names (``device``, ``top``, ``hub_rpm``, as in
``configs/*.toml``; a TOML file may also group them in the sections above); ``FLAT`` maps
each flat name to its section and field. Precedence: the defaults here <
the shipped ``default.toml`` (``configs/default.toml`` in the repo) < a ``--config`` file
< CLI flags. Validation needs no heavy
imports, so bad input fails before anything is written; source and executor names are
checked against their registries, so a plugin's is accepted.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from importlib import resources
from importlib.resources.abc import Traversable
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import tomllib

from sweeper.records import Stage
from sweeper.settings.errors import UsageError
from sweeper.settings.plugins import resolve
from sweeper.settings.validate import check_numbers, check_types

# The defaults ship in the package (read through importlib.resources, so an installed wheel
# has them); the repo's configs/default.toml is a link to this file.
DEFAULT_SETTINGS: Traversable = resources.files("sweeper.settings") / "default.toml"
WEIGHTS_MODES = ("tiny", "random", "pretrained")
DTYPES = ("float32", "bfloat16", "float16")
LISTS = ("stages", "tasks", "libraries", "model_types", "include", "exclude")


@dataclass(frozen=True)
class SourceSettings:
    """Which models a sweep takes, and how it talks to the Hub."""

    name: str = "auto"  # flat: source (a name in the source registry)
    catalog: str | None = None
    top: int | None = None
    # Filters (empty = no filter).
    tasks: tuple[str, ...] = ()
    libraries: tuple[str, ...] = ()
    model_types: tuple[str, ...] = ()
    include: tuple[str, ...] = ()
    exclude: tuple[str, ...] = ()
    hub_timeout: float = 3.0
    # Hub traffic of the whole node (listing and every worker): requests per minute, and
    # tries per request on 429/5xx/connection resets (sweeper.hub.http), the first pause.
    hub_rpm: float = 300.0
    hub_tries: int = 6
    hub_backoff_s: float = 1.0
    # Models a Hub listing asks for when no --top bounds it.
    hub_limit: int = 1000


@dataclass(frozen=True)
class MaterialiseSettings:
    """How each model is built on the CPU before it meets the device."""

    weights: str = "tiny"
    trust_remote_code: bool = False
    seed: int = 0
    batch_size: int = 2
    seq_len: int = 16
    max_parameters: int = 150_000_000  # caps built (tiny/random) models
    # Pretrained weights: skip (too_large) above these; None = what this node can hold
    # (free disk of the Hub cache, available memory).
    max_params: int | None = None
    max_download_gb: float | None = None


@dataclass(frozen=True)
class DeviceSettings:
    """The device as the user named it; planning turns it into a ``DeviceSpec``."""

    spec: str = "cpu"  # flat: device (cpu, cuda:1, trnsim, ...)
    profile: str | None = None  # flat: device_profile
    compile_backend: str | None = None
    dtype: str = "float32"
    collect_all: bool = False
    retie_weights: bool = False
    # Compile as a team that wants one graph does: fullgraph=True and data-dependent ops
    # captured into it, so a refusal names the op. Off: Dynamo's defaults, as users compile.
    whole_graph: bool = False
    # Exact float32 matmuls and convolutions (TF32 off, matmul precision "highest"): shows
    # what a device's default reduced float32 math hides.
    strict_float32: bool = False


@dataclass(frozen=True)
class CheckSettings:
    """What each model goes through."""

    stages: tuple[str, ...] = tuple(s.value for s in Stage)
    atol: float = 1e-3
    # Seconds the shapes stage may take (never past what is left of the model's --timeout):
    # out of time, the stage is recorded as a timeout and the earlier stages keep their verdicts.
    shapes_timeout: float = 120.0


@dataclass(frozen=True)
class ExecutionSettings:
    """How models are scheduled and isolated."""

    executor: str = "ray"  # a name in the executor registry
    timeout: float = 300.0
    workers: int | None = None
    address: str | None = None
    num_cpus: float = 1.0
    num_gpus: float = 0.0
    retries: int = 2
    # A worker's warm imports and lowering cache are worth keeping; growth past 3 GB
    # (executors/slot.py) recycles a worker that leaks long before this count does.
    worker_max_models: int = 200
    max_in_flight: int | None = None
    memory_limit_mb: int | None = None


@dataclass(frozen=True)
class OutputSettings:
    """Where results go and whether checks are shared (see sweeper.storage.reuse)."""

    out: str | None = None
    reuse: bool = True
    cache: str | None = None
    recheck: float = 0.0  # percent of the checks --cache answers that run again (sweeper.storage.recheck)


SECTIONS: dict[str, type] = {
    "source": SourceSettings,
    "materialise": MaterialiseSettings,
    "device": DeviceSettings,
    "check": CheckSettings,
    "execution": ExecutionSettings,
    "output": OutputSettings,
}
# Flat names whose field is called otherwise inside its section.
_RENAMED = {("source", "name"): "source", ("device", "spec"): "device", ("device", "profile"): "device_profile",
            ("execution", "executor"): "executor"}  # fmt: skip
# flat name -> (section, field), in the order sections list them.
FLAT: dict[str, tuple[str, str]] = {
    _RENAMED.get((section, f.name), f.name): (section, f.name)
    for section, cls in SECTIONS.items()
    for f in dataclasses.fields(cls)
}


@dataclass(frozen=True)
class SweepConfig:
    """Everything one sweep needs to know; ``sweep.json`` carries it (flat, see ``to_dict``)."""

    source: SourceSettings = field(default_factory=SourceSettings)
    materialise: MaterialiseSettings = field(default_factory=MaterialiseSettings)
    device: DeviceSettings = field(default_factory=DeviceSettings)
    check: CheckSettings = field(default_factory=CheckSettings)
    execution: ExecutionSettings = field(default_factory=ExecutionSettings)
    output: OutputSettings = field(default_factory=OutputSettings)

    @classmethod
    def of(cls, **flat: Any) -> SweepConfig:
        """The defaults with some settings changed by their flat names (not validated)."""
        return cls().replace(**flat)

    @property
    def out_dir(self) -> Path:
        """Where records, sweep.json and the report go."""
        out = self.output.out
        return Path(out) if out else Path("runs") / f"sweep-{self.device.spec.replace(':', '_')}"

    def to_dict(self) -> dict[str, Any]:
        """Every setting by its flat name (what ``sweep.json`` and settings files use)."""
        data = {name: getattr(getattr(self, section), key) for name, (section, key) in FLAT.items()}
        for name in LISTS:
            data[name] = list(data[name])
        return data

    def replace(self, **flat: Any) -> SweepConfig:
        """A copy with settings changed by their flat names (``top=None``, ``device="cpu"``)."""
        unknown = sorted(set(flat) - set(FLAT))
        if unknown:
            raise TypeError(f"unknown setting(s): {', '.join(unknown)}")
        changes: dict[str, dict[str, Any]] = {}
        for name, value in flat.items():
            section, key = FLAT[name]
            changes.setdefault(section, {})[key] = value
        return dataclasses.replace(
            self, **{s: dataclasses.replace(getattr(self, s), **kv) for s, kv in changes.items()}
        )


def validate(cfg: SweepConfig) -> SweepConfig:
    """Raise ``UsageError`` with one clear line for any value that cannot work."""
    check_numbers(SimpleNamespace(**cfg.to_dict()))
    src, mat, dev, run = cfg.source, cfg.materialise, cfg.device, cfg.execution
    if mat.weights not in WEIGHTS_MODES:
        raise UsageError(f"unknown weights mode {mat.weights!r}; choose one of {', '.join(WEIGHTS_MODES)}")
    _registered("source", src.name, _known("source"))
    _registered("executor", run.executor, _known("executor"))
    if dev.dtype not in DTYPES:
        raise UsageError(f"unknown dtype {dev.dtype!r}; choose one of {', '.join(DTYPES)}")
    known = [s.value for s in Stage]
    bad = [s for s in cfg.check.stages if s not in known]
    if bad or not cfg.check.stages:
        raise UsageError(f"unknown stage {', '.join(bad) or '(none given)'}; choose from {', '.join(known)}")
    if src.name == "catalog" and not src.catalog:
        raise UsageError("--source catalog needs --catalog PATH")
    if src.hub_rpm <= 0:
        raise UsageError(f"--hub-rpm must be a positive number of requests per minute, got {src.hub_rpm}")
    if src.hub_tries <= 0:
        raise UsageError(f"--hub-tries must be 1 or more, got {src.hub_tries}")
    if src.hub_backoff_s < 0:
        raise UsageError(f"hub_backoff_s must be 0 or more seconds, got {src.hub_backoff_s}")
    if src.hub_limit <= 0:
        raise UsageError(f"hub_limit must be a positive number of models, got {src.hub_limit}")
    if mat.max_params is not None and mat.max_params <= 0:
        raise UsageError(f"--max-params must be a positive number of parameters, got {mat.max_params}")
    if mat.max_download_gb is not None and mat.max_download_gb <= 0:
        raise UsageError(f"--max-download-gb must be positive, got {mat.max_download_gb}")
    return cfg


def _registered(what: str, name: str, known: list[str]) -> None:
    if name not in known:
        raise UsageError(f"unknown {what} {name!r}; choose one of {', '.join(known)}")


# The registries of source and executor names live in sources/ and executors/, above this
# floor: asked by name, as a plug point reaches its plugins, so settings imports neither.
_KNOWN = {"source": "sweeper.sources.registry:known_sources", "executor": "sweeper.executors.registry:known_executors"}


def _known(what: str) -> list[str]:
    """The names ``what`` (source, executor) accepts, a plugin's included."""
    return resolve(_KNOWN[what])()


def load_toml(path: Path | Traversable) -> dict[str, Any]:
    """Read one TOML file of settings by flat name: a flat table, a ``[sweep]`` table, or
    tables named after the sections (``[execution]``, ``[device]``, ...)."""
    try:
        text = path.read_text(encoding="utf-8")
        data = tomllib.loads(text)
    except FileNotFoundError:
        raise UsageError(f"config file not found: {path}") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise UsageError(f"config file {path} cannot be read: {exc}") from None
    except tomllib.TOMLDecodeError as exc:
        raise UsageError(f"config file {path} is not valid TOML: {exc}") from None
    table = data.get("sweep", data)
    if not isinstance(table, dict):
        raise UsageError(f"config file {path}: [sweep] must be a table of settings")
    table = _flatten(table, path)
    check_types(table, flat_fields(), path=path, text=text)
    return table


def _flatten(table: dict[str, Any], path: Path) -> dict[str, Any]:
    """Section tables become flat names; a name a section does not hold is an error."""
    flat: dict[str, Any] = {}
    for key, value in table.items():
        if key in SECTIONS and isinstance(value, dict):
            for name, inner in value.items():
                if FLAT.get(name, ("",))[0] != key:
                    raise UsageError(f"config file {path}: [{key}] has no setting {name!r}")
                flat[name] = inner
        else:
            flat[key] = value
    return flat


def flat_fields() -> tuple[dataclasses.Field, ...]:
    """Each setting's field under its flat name (for type checks of settings files)."""
    out = []
    for name, (section, key) in FLAT.items():
        found = next(f for f in dataclasses.fields(SECTIONS[section]) if f.name == key)
        clone = dataclasses.field(default=None)
        clone.name, clone.type = name, found.type
        out.append(clone)
    return tuple(out)


def build_config(overrides: dict[str, Any], *, config_file: str | None = None) -> SweepConfig:
    """Merge defaults, the shipped ``default.toml``, an optional file and CLI overrides (flat names)."""
    merged: dict[str, Any] = dict(load_toml(DEFAULT_SETTINGS))
    if config_file:
        merged.update(load_toml(Path(config_file)))
    merged.update({k: v for k, v in overrides.items() if v is not None})
    unknown = sorted(set(merged) - set(FLAT))
    if unknown:
        raise UsageError(f"unknown setting(s) in config: {', '.join(unknown)}")
    for key in LISTS:
        if key in merged and merged[key] is not None:
            merged[key] = tuple(_split(merged[key]))
    return validate(SweepConfig.of(**merged))


def _split(value: Any) -> list[str]:
    """Accept a list, a comma-separated string, or repeated flags holding commas."""
    items = value if isinstance(value, (list, tuple)) else [value]
    out: list[str] = []
    for item in items:
        out.extend(part.strip() for part in str(item).split(",") if part.strip())
    return out
