"""The sweep's configuration: one frozen ``SweepConfig``.

Precedence: the defaults here < ``configs/default.toml`` < a ``--config`` file < CLI flags.
Validation that needs no heavy imports happens in ``validate`` so bad input fails before
anything is written.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import tomllib

from sweeper.errors import UsageError
from sweeper.records import Stage

REPO_CONFIGS = Path(__file__).resolve().parent.parent / "configs"
WEIGHTS_MODES = ("tiny", "random", "pretrained")
SOURCES = ("auto", "zoo", "catalog", "hub")
EXECUTORS = ("inline", "process", "ray")
DTYPES = ("float32", "bfloat16", "float16")


@dataclass(frozen=True)
class SweepConfig:
    """Everything one sweep needs to know; records and ``sweep.json`` carry it."""

    device: str = "cpu"
    top: int | None = None
    source: str = "auto"
    catalog: str | None = None
    weights: str = "tiny"
    stages: tuple[str, ...] = tuple(s.value for s in Stage)
    executor: str = "ray"
    out: str | None = None
    timeout: float = 300.0
    compile_backend: str | None = None
    device_profile: str | None = None
    collect_all: bool = False
    retie_weights: bool = False
    trust_remote_code: bool = False
    dtype: str = "float32"
    seed: int = 0
    batch_size: int = 2
    seq_len: int = 16
    max_parameters: int = 150_000_000
    hub_timeout: float = 3.0
    # Hub traffic of the whole node (listing and every worker): requests per minute, and
    # tries per request on 429/5xx/connection resets (sweeper.hub_http).
    hub_rpm: float = 300.0
    hub_tries: int = 6
    # Pretrained weights: skip (too_large) above these; None = what this node can hold
    # (free disk of the Hub cache, available memory). ``max_parameters`` caps built models.
    max_params: int | None = None
    max_download_gb: float | None = None
    atol: float = 1e-3
    # Filters (empty = no filter).
    tasks: tuple[str, ...] = ()
    libraries: tuple[str, ...] = ()
    model_types: tuple[str, ...] = ()
    include: tuple[str, ...] = ()
    exclude: tuple[str, ...] = ()
    # Executors.
    workers: int | None = None
    address: str | None = None
    num_cpus: float = 1.0
    num_gpus: float = 0.0
    retries: int = 2
    worker_max_models: int = 50
    max_in_flight: int | None = None
    memory_limit_mb: int | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def out_dir(self) -> Path:
        """Where records, sweep.json and the report go."""
        return Path(self.out) if self.out else Path("runs") / f"sweep-{self.device.replace(':', '_')}"

    def to_dict(self) -> dict[str, Any]:
        data = dataclasses.asdict(self)
        data["stages"] = list(self.stages)
        return data

    def replace(self, **changes: Any) -> SweepConfig:
        return dataclasses.replace(self, **changes)


def validate(cfg: SweepConfig) -> SweepConfig:
    """Raise ``UsageError`` with one clear line for any value that cannot work."""
    if cfg.top is not None and cfg.top <= 0:
        raise UsageError(f"--top must be a positive number of models, got {cfg.top}")
    if cfg.weights not in WEIGHTS_MODES:
        raise UsageError(f"unknown weights mode {cfg.weights!r}; choose one of {', '.join(WEIGHTS_MODES)}")
    if cfg.source not in SOURCES:
        raise UsageError(f"unknown source {cfg.source!r}; choose one of {', '.join(SOURCES)}")
    if cfg.executor not in EXECUTORS:
        raise UsageError(f"unknown executor {cfg.executor!r}; choose one of {', '.join(EXECUTORS)}")
    if cfg.dtype not in DTYPES:
        raise UsageError(f"unknown dtype {cfg.dtype!r}; choose one of {', '.join(DTYPES)}")
    known = [s.value for s in Stage]
    bad = [s for s in cfg.stages if s not in known]
    if bad or not cfg.stages:
        raise UsageError(f"unknown stage {', '.join(bad) or '(none given)'}; choose from {', '.join(known)}")
    if cfg.timeout <= 0:
        raise UsageError(f"--timeout must be positive seconds, got {cfg.timeout}")
    if cfg.source == "catalog" and not cfg.catalog:
        raise UsageError("--source catalog needs --catalog PATH")
    if cfg.workers is not None and cfg.workers <= 0:
        raise UsageError(f"--workers must be positive, got {cfg.workers}")
    if cfg.retries < 0:
        raise UsageError(f"--retries must be 0 or more, got {cfg.retries}")
    if cfg.hub_rpm <= 0:
        raise UsageError(f"--hub-rpm must be a positive number of requests per minute, got {cfg.hub_rpm}")
    if cfg.hub_tries <= 0:
        raise UsageError(f"--hub-tries must be 1 or more, got {cfg.hub_tries}")
    if cfg.max_params is not None and cfg.max_params <= 0:
        raise UsageError(f"--max-params must be a positive number of parameters, got {cfg.max_params}")
    if cfg.max_download_gb is not None and cfg.max_download_gb <= 0:
        raise UsageError(f"--max-download-gb must be positive, got {cfg.max_download_gb}")
    return cfg


def load_toml(path: Path) -> dict[str, Any]:
    """Read one TOML file of sweep settings (a flat table; ``[sweep]`` also accepted)."""
    try:
        data = tomllib.loads(path.read_text())
    except FileNotFoundError:
        raise UsageError(f"config file not found: {path}") from None
    except tomllib.TOMLDecodeError as exc:
        raise UsageError(f"config file {path} is not valid TOML: {exc}") from None
    return data.get("sweep", data)


def build_config(overrides: dict[str, Any], *, config_file: str | None = None) -> SweepConfig:
    """Merge defaults, ``configs/default.toml``, an optional file and CLI overrides."""
    merged: dict[str, Any] = {}
    default_file = REPO_CONFIGS / "default.toml"
    if default_file.exists():
        merged.update(load_toml(default_file))
    if config_file:
        merged.update(load_toml(Path(config_file)))
    merged.update({k: v for k, v in overrides.items() if v is not None})
    names = {f.name for f in dataclasses.fields(SweepConfig)}
    unknown = sorted(set(merged) - names)
    if unknown:
        raise UsageError(f"unknown setting(s) in config: {', '.join(unknown)}")
    for key in ("stages", "tasks", "libraries", "model_types", "include", "exclude"):
        if key in merged and merged[key] is not None:
            merged[key] = tuple(_split(merged[key]))
    return validate(SweepConfig(**merged))


def _split(value: Any) -> list[str]:
    """Accept a list, a comma-separated string, or repeated flags holding commas."""
    items = value if isinstance(value, (list, tuple)) else [value]
    out: list[str] = []
    for item in items:
        out.extend(part.strip() for part in str(item).split(",") if part.strip())
    return out
