"""The ``hub`` source: the live Hub listing, most downloaded first.

The Hub's ``/api/models?sort=downloads`` pages against ``HF_ENDPOINT`` (read when the
source runs, so a mirror set after import still counts), streamed: refs are yielded as
each page arrives and journaled with the listing's cursor, so an interrupted listing
continues on rerun (``sweeper.sources.hub_listing``). A complete listing is saved as a
snapshot (``sweeper.sources.snapshots``) for later offline runs. ``HF_TOKEN`` is sent
to the endpoint by the client as usual, but it is never put into refs, snapshots,
``describe()`` or error messages (the rules are ``sweeper.hub.access``'s).
"""

from __future__ import annotations

import datetime as dt
import functools
import itertools
import time
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sweeper.hub.access import endpoint, hub_offline, one_line, probe, shown_endpoint
from sweeper.hub.http import install
from sweeper.records import ModelRef
from sweeper.settings.errors import UsageError
from sweeper.sources.hub_listing import ListingJournal, Page, list_pages
from sweeper.sources.snapshots import ref_from_row, snapshot_dir, snapshot_row

if TYPE_CHECKING:
    from sweeper.settings.config import SweepConfig

# Without --top the listing stops here: the whole Hub is millions of repos.
# With filters, list this many times --top so enough models survive the filters.
FILTER_HEADROOM = 10
_EXPAND = ["downloads", "pipeline_tag", "library_name", "tags", "sha", "config"]


class HubListingError(UsageError):
    """The Hub did not answer the listing (``auto`` catches it and falls back)."""


def listing_limit(cfg: SweepConfig) -> int:
    """How many models to ask the Hub for, given ``--top`` and the filters."""
    filtered = any((cfg.source.tasks, cfg.source.libraries, cfg.source.model_types, cfg.source.include, cfg.source.exclude))
    if cfg.source.top is None:
        return cfg.source.hub_limit
    return cfg.source.top * FILTER_HEADROOM if filtered else cfg.source.top


class HubSource:
    """Refs from the live Hub listing, streamed page by page as the Hub answers.

    ``start`` probes the Hub and reads the first page (so an unreachable Hub fails before
    any ref); ``refs`` then yields each page's refs as it arrives while the listing is
    journaled (``hub_listing``), so a rerun after an interruption continues from the
    cursor. The complete listing becomes the day's snapshot.
    """

    name = "hub"
    streaming = True

    def __init__(self, cfg: SweepConfig, *, limit: int | None = None, save: bool = True) -> None:
        install(cfg)
        self.limit = limit if limit is not None else listing_limit(cfg)
        self.hub_timeout = cfg.source.hub_timeout
        self.save = save
        self._refs: list[ModelRef] | None = None
        self._pending: Iterator[ModelRef] | None = None
        self._snapshot: Path | None = None
        self._seconds: float | None = None
        self.resumed = 0  # rows read back from an interrupted listing

    def start(self) -> None:
        """Open the listing (once): raises ``HubListingError`` when the Hub does not answer."""
        if self._refs is not None or self._pending is not None:
            return
        if hub_offline():
            raise HubListingError("the Hub source needs network, but HF_HUB_OFFLINE is set")
        # The listing client retries connection errors for ~20 s; a quick probe first
        # makes an unreachable Hub fail fast and with a clear reason.
        problem = probe(self.hub_timeout)
        if problem is not None:
            raise HubListingError(f"Hub unreachable ({problem})")
        stream = self._stream()
        first = next(stream, None)
        if first is None:
            raise HubListingError(f"Hub listing from {shown_endpoint()} returned no models")
        self._pending = itertools.chain([first], stream)

    def fetch(self) -> list[ModelRef]:
        """The whole listing (listed now, once); raises ``HubListingError``."""
        if self._refs is None:
            for _ in self.refs():
                pass
        assert self._refs is not None
        return self._refs

    def refs(self) -> Iterator[ModelRef]:
        """Yield the listed refs, rank 1 first, as the pages arrive."""
        if self._refs is not None:
            yield from self._refs
            return
        self.start()
        assert self._pending is not None
        pending, self._pending = self._pending, None
        yield from pending

    def _stream(self) -> Iterator[ModelRef]:
        """Refs page by page; the journal keeps them and the cursor as they stream."""
        start = time.monotonic()
        params = {"sort": "downloads", "limit": self.limit, "expand": _EXPAND}
        journal = ListingJournal(snapshot_dir(), f"{endpoint()} {sorted(params.items())!r}") if self.save else None
        rows, next_url = journal.resume() if journal is not None else ([], None)
        self.resumed = len(rows)
        refs = [ref_from_row(row) for row in rows]
        yield from refs
        if next_url is None and rows:  # a journal without a cursor: nothing more to list
            return
        url, query = (next_url, None) if next_url else (f"{endpoint()}/api/models", params)
        for page in _pages(url, query, listed=len(refs)):
            fresh = [_to_ref(item, rank) for rank, item in enumerate(page.items, start=len(refs) + 1)]
            fresh = fresh[: max(0, self.limit - len(refs))]
            done = page.next_url is None or len(refs) + len(fresh) >= self.limit
            if journal is not None:
                journal.append([snapshot_row(ref) for ref in fresh], None if done else page.next_url)
            refs.extend(fresh)
            if done:
                # Before the last refs go out: a consumer that stops at --top never resumes us.
                self._finish(refs, journal, time.monotonic() - start)
            yield from fresh
            if done:
                return

    def _finish(self, refs: list[ModelRef], journal: ListingJournal | None, seconds: float) -> None:
        """The listing is whole: keep it, and make it the day's snapshot."""
        self._seconds = seconds
        self._refs = refs
        if journal is not None and refs:
            self._snapshot = journal.finish()

    def describe(self) -> dict[str, str]:
        """The endpoint, and once listed: how many models, when, and the snapshot saved."""
        out = {"name": self.name, "endpoint": shown_endpoint(), "limit": str(self.limit)}
        if self._refs is not None:
            out["rows"] = str(len(self._refs))
            out["snapshot_date"] = dt.datetime.now(dt.timezone.utc).date().isoformat()
            out["seconds"] = f"{self._seconds:.2f}"
        if self.resumed:
            out["resumed_rows"] = str(self.resumed)
        if self._snapshot is not None:
            out["snapshot"] = str(self._snapshot)
        return out


def _pages(url: str, query: dict[str, Any] | None, *, listed: int) -> Iterator[Page]:
    """``list_pages``, with any failure turned into one redacted ``HubListingError``."""
    pages = list_pages(url, query)
    while True:
        try:
            page = next(pages, None)
        except Exception as exc:  # noqa: BLE001 - every client failure means "no more listing"; say which
            again = "; rerun to continue from there" if listed else ""
            raise HubListingError(
                f"Hub listing from {shown_endpoint()} failed after {listed} models: {one_line(exc)}{again}"
            ) from None
        if page is None:
            return
        listed += len(page.items)
        yield page


def _to_ref(item: dict[str, Any], rank: int) -> ModelRef:
    """One listing entry as a ref (the fields ``list_models(expand=...)`` returns)."""
    from huggingface_hub.hf_api import ModelInfo

    info = ModelInfo(**{"siblings": None, **item})
    return ModelRef(
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


def hub_source(cfg: SweepConfig) -> HubSource:
    """The ``hub`` source (live listing, saved as a snapshot)."""
    return HubSource(cfg)
