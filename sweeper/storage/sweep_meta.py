"""sweep.json as a type: what the driver writes and the report reads.

``SweepMeta.from_dict`` reads any version's sweep.json leniently: a field may be absent (a
sweep killed half-way has no ``ended``, an older version wrote fewer fields) and a section
of the wrong shape (a hand edit: a string where a table belongs) reads as absent rather
than trusted. Sections stay the plain tables they are on disk (``config`` is whatever the
settings serialise to), and the report reads settings through ``setting``.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import uuid
from dataclasses import dataclass, field
from typing import Any

SECTIONS = ("config", "source", "device", "versions")


def now() -> str:
    """The current UTC time as sweep.json records it (ISO 8601, whole seconds)."""
    return dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")


def new_sweep_id() -> str:
    """A fresh id: the day and 8 random hex digits (``20261201-5193b0ea``)."""
    return f"{dt.date.today():%Y%m%d}-{uuid.uuid4().hex[:8]}"


@dataclass(frozen=True)
class SweepMeta:
    """One sweep's identity: what ran, where, with which settings, for how long.

    ``None`` means the file did not say; ``found`` is False when there was no sweep.json
    at all (reports then say so). Field order is the order written to disk.
    """

    sweep_id: str | None = None
    started: str | None = None
    resumed: bool = False
    wall_seconds: float | None = None
    config: dict[str, Any] | None = None  # the sweep's settings, as they serialise
    source: dict[str, Any] | None = None  # what the source says of itself: name, path, snapshot_date, hub
    device: dict[str, Any] | None = None  # spec, and profile ({name, hash}, or None without one)
    versions: dict[str, str] | None = None
    total: int | None = None
    interrupted: bool = False
    ended: str | None = None
    cache: dict[str, Any] | None = None  # the shared check cache, when one was used
    found: bool = field(default=True, compare=False)

    @classmethod
    def missing(cls) -> SweepMeta:
        """What a folder without sweep.json reads as."""
        return cls(found=False)

    @classmethod
    def begin(
        cls, previous: SweepMeta, *, config: dict[str, Any], source: dict[str, Any], device: dict[str, Any],
        versions: dict[str, str], total: int,
    ) -> SweepMeta:
        """A sweep starting in a folder whose sweep.json read ``previous``: a resumed sweep
        keeps its id and start, and its wall time accumulates."""
        return cls(
            sweep_id=previous.sweep_id or new_sweep_id(),
            started=previous.started or now(),
            resumed=previous.found,
            wall_seconds=float(previous.wall_seconds or 0.0),
            config=config,
            source=source,
            device=device,
            versions=versions,
            total=total,
        )

    def finish(self, seconds: float, *, interrupted: bool = False, **changes: Any) -> SweepMeta:
        """The same sweep ended now, ``seconds`` of wall time later; ``changes`` replace
        fields learnt while it ran (a streamed listing's ``source`` and ``total``, ``cache``)."""
        wall = round((self.wall_seconds or 0.0) + seconds, 2)
        return dataclasses.replace(self, ended=now(), wall_seconds=wall, interrupted=interrupted, **changes)

    def to_dict(self) -> dict[str, Any]:
        """The sweep.json table: fields the sweep did not learn (``None``) are left out, as
        is ``interrupted`` unless it was."""
        out = {}
        for f in dataclasses.fields(self):
            value = getattr(self, f.name)
            if f.name == "found" or value is None or (f.name == "interrupted" and not value):
                continue
            out[f.name] = value
        return out

    @classmethod
    def from_dict(cls, data: Any) -> SweepMeta:
        """Read a sweep.json table of any version; see the module's docstring."""
        if not isinstance(data, dict):
            data = {}
        sections = {name: _section(data, name) for name in SECTIONS}
        wall = data.get("wall_seconds")
        total = data.get("total")
        return cls(
            sweep_id=_text(data.get("sweep_id")),
            started=_text(data.get("started")),
            resumed=bool(data.get("resumed")),
            wall_seconds=wall if isinstance(wall, (int, float)) else None,
            total=total if isinstance(total, int) and not isinstance(total, bool) else None,
            interrupted=data.get("interrupted") is True,
            ended=_text(data.get("ended")),
            cache=data["cache"] if isinstance(data.get("cache"), dict) else None,
            found=bool(data),
            **sections,
        )

    @property
    def device_spec(self) -> str | None:
        """The device as the user named it (``trnsim``, ``cuda:0``)."""
        spec = (self.device or {}).get("spec")
        return str(spec) if spec else None

    @property
    def profile(self) -> dict[str, Any] | None:
        """The device profile's name and hash, when the device has one."""
        return (self.device or {}).get("profile") or None

    @property
    def source_name(self) -> str:
        """The source's name (``catalog``, ``zoo``, ``hub``), "" when unknown."""
        return str((self.source or {}).get("name") or "")

    @property
    def stages(self) -> list[str] | None:
        """The stages the sweep was set to run (None: sweep.json does not say)."""
        stages = self.setting("stages")
        return stages if _names(stages) else None

    def setting(self, name: str) -> Any:
        """One setting of the sweep by name, wherever the settings table keeps it (at its
        top level, or one section down in a nested one); None when it is not there."""
        config = self.config or {}
        if name in config:
            return config[name]
        for section in config.values():
            if isinstance(section, dict) and name in section:
                return section[name]
        return None


def _text(value: Any) -> str | None:
    return str(value) if isinstance(value, (str, int, float)) and not isinstance(value, bool) else None


def _section(data: dict[str, Any], name: str) -> dict[str, Any] | None:
    """One section as a table, or None when absent or of the wrong shape."""
    value = data.get(name)
    if name == "device" and isinstance(value, str):  # the oldest files named the device only
        value = {"spec": value}
    if not isinstance(value, dict):
        return None
    if name == "device" and not isinstance(value.get("profile"), (dict, type(None))):
        value = {k: v for k, v in value.items() if k != "profile"}
    if name == "config" and value.get("stages") is not None and not _names(value["stages"]):
        value = {k: v for k, v in value.items() if k != "stages"}
    return value


def _names(value: Any) -> bool:
    return isinstance(value, list) and all(isinstance(x, str) for x in value)
