"""The ``hub`` source: the live Hub listing, most downloaded first.

``huggingface_hub.list_models(sort="downloads")`` against ``HF_ENDPOINT`` (read when the
source runs, so a mirror set after import still counts). A complete listing is saved as
a snapshot (``sweeper.sources.snapshots``) for later offline runs. ``HF_TOKEN`` is sent
to the endpoint by the client as usual, but it is never put into refs, snapshots,
``describe()`` or error messages: ``redact`` scrubs it from any text that leaves here.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import functools
import os
import time
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit, urlunsplit

from sweeper.errors import UsageError
from sweeper.records import ModelRef
from sweeper.sources.base import register_source
from sweeper.sources.snapshots import save_snapshot

if TYPE_CHECKING:
    from sweeper.config import SweepConfig

# Without --top the listing stops here: the whole Hub is millions of repos.
DEFAULT_LIMIT = 1000
# With filters, list this many times --top so enough models survive the filters.
FILTER_HEADROOM = 10
_EXPAND = ["downloads", "pipeline_tag", "library_name", "tags", "sha", "config"]


class HubListingError(UsageError):
    """The Hub did not answer the listing (``auto`` catches it and falls back)."""


def endpoint() -> str:
    """The Hub URL in use: ``HF_ENDPOINT`` now, else the client's configured default."""
    from huggingface_hub import constants

    return (os.environ.get("HF_ENDPOINT") or constants.ENDPOINT).rstrip("/")


def shown_endpoint() -> str:
    """``endpoint()`` without any user:password part, for printing and records."""
    parts = urlsplit(endpoint())
    host = parts.hostname or ""
    netloc = f"{host}:{parts.port}" if parts.port else host
    return urlunsplit((parts.scheme, netloc, parts.path, "", ""))


def hub_offline() -> bool:
    """True when ``HF_HUB_OFFLINE`` (or ``TRANSFORMERS_OFFLINE``) asks for no network."""
    from huggingface_hub import constants

    env = os.environ.get("HF_HUB_OFFLINE") or os.environ.get("TRANSFORMERS_OFFLINE") or ""
    return env.strip().upper() in {"1", "ON", "YES", "TRUE"} or constants.is_offline_mode()


def redact(text: str) -> str:
    """``text`` with any Hub token in use replaced by ``***``."""
    secrets = {os.environ.get(name, "") for name in ("HF_TOKEN", "HUGGING_FACE_HUB_TOKEN")}
    # A broken token file must not hide the message being redacted.
    with contextlib.suppress(Exception):
        from huggingface_hub import get_token

        secrets.add(get_token() or "")
    for secret in secrets:
        if len(secret) >= 4:
            text = text.replace(secret, "***")
    return text


def one_line(exc: BaseException) -> str:
    """An exception as one redacted line: ``Type: first words``."""
    words = " ".join(str(exc).split())
    return redact(f"{type(exc).__name__}: {words}" if words else type(exc).__name__)


def probe(timeout: float) -> str | None:
    """Ask the Hub for one model; ``None`` when it answered in time, else why not."""
    if hub_offline():
        return "HF_HUB_OFFLINE is set"
    from huggingface_hub.utils import build_hf_headers, get_session, hf_raise_for_status

    url = f"{endpoint()}/api/models"
    try:
        response = get_session().get(url, params={"limit": 1}, headers=build_hf_headers(), timeout=timeout)
        hf_raise_for_status(response)
        if not isinstance(response.json(), list):
            return f"{shown_endpoint()} answered, but not with a model listing"
    except Exception as exc:  # noqa: BLE001 - timeouts, refused connections, HTTP errors, bad JSON
        return f"{shown_endpoint()}: {one_line(exc)}"
    return None


def listing_limit(cfg: SweepConfig) -> int:
    """How many models to ask the Hub for, given ``--top`` and the filters."""
    filtered = any((cfg.tasks, cfg.libraries, cfg.model_types, cfg.include, cfg.exclude))
    if cfg.top is None:
        return int(cfg.extra.get("hub_limit", DEFAULT_LIMIT))
    return cfg.top * FILTER_HEADROOM if filtered else cfg.top


class HubSource:
    """Refs from the live Hub listing; the listing is fetched once, on first use."""

    name = "hub"

    def __init__(self, cfg: SweepConfig, *, limit: int | None = None, save: bool = True) -> None:
        self.limit = limit if limit is not None else listing_limit(cfg)
        self.hub_timeout = cfg.hub_timeout
        self.save = save
        self._refs: list[ModelRef] | None = None
        self._snapshot: Path | None = None
        self._seconds: float | None = None

    def fetch(self) -> list[ModelRef]:
        """List the Hub now (once); raises ``HubListingError`` when it does not answer."""
        if self._refs is None:
            if hub_offline():
                raise HubListingError("the Hub source needs network, but HF_HUB_OFFLINE is set")
            # The listing client retries connection errors for ~20 s; a quick probe first
            # makes an unreachable Hub fail fast and with a clear reason.
            problem = probe(self.hub_timeout)
            if problem is not None:
                raise HubListingError(f"Hub unreachable ({problem})")
            start = time.monotonic()
            try:
                refs = list(_list_refs(self.limit))
            except Exception as exc:  # noqa: BLE001 - every client failure means "no listing"; say which
                raise HubListingError(f"Hub listing from {shown_endpoint()} failed: {one_line(exc)}") from None
            if not refs:
                raise HubListingError(f"Hub listing from {shown_endpoint()} returned no models")
            self._seconds = time.monotonic() - start
            self._refs = refs
            if self.save:
                self._snapshot = save_snapshot(refs)
        return self._refs

    def refs(self) -> Iterator[ModelRef]:
        """Yield the listed refs, rank 1 first."""
        yield from self.fetch()

    def describe(self) -> dict[str, str]:
        """The endpoint, and once listed: how many models, when, and the snapshot saved."""
        out = {"name": self.name, "endpoint": shown_endpoint(), "limit": str(self.limit)}
        if self._refs is not None:
            out["rows"] = str(len(self._refs))
            out["snapshot_date"] = dt.datetime.now(dt.timezone.utc).date().isoformat()
            out["seconds"] = f"{self._seconds:.2f}"
        if self._snapshot is not None:
            out["snapshot"] = str(self._snapshot)
        return out


def _list_refs(limit: int) -> Iterator[ModelRef]:
    from huggingface_hub import HfApi

    api = HfApi(endpoint=endpoint())
    infos = api.list_models(sort="downloads", limit=limit, expand=_EXPAND)  # type: ignore[arg-type]
    for rank, info in enumerate(infos, start=1):
        yield ModelRef(
            model_id=info.id,
            rank=rank,
            downloads=info.downloads,
            pipeline_tag=info.pipeline_tag or None,
            library_name=info.library_name or None,
            model_type=_model_type(info.config, info.tags),
            revision=info.sha or None,
            source="hub",
        )


def _model_type(config: dict[str, Any] | None, tags: list[str] | None) -> str | None:
    """``config.model_type`` when the Hub gives it, else a tag that names a model type."""
    if isinstance(config, dict) and isinstance(config.get("model_type"), str) and config["model_type"]:
        return str(config["model_type"])
    if not tags:
        return None
    known = _known_model_types()
    return next((tag for tag in tags if tag in known), None)


@functools.cache
def _known_model_types() -> frozenset[str]:
    try:
        from transformers.models.auto.configuration_auto import CONFIG_MAPPING_NAMES
    except Exception:  # noqa: BLE001 - without transformers, tags cannot be told apart
        return frozenset()
    return frozenset(CONFIG_MAPPING_NAMES)


@register_source("hub")
def hub_source(cfg: SweepConfig) -> HubSource:
    """The ``hub`` source (live listing, saved as a snapshot)."""
    return HubSource(cfg)
