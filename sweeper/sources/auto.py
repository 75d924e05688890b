"""The ``auto`` source: the Hub when it answers, else the newest snapshot, else the zoo.

The choice is made when the source is built, by a quick probe bounded by
``cfg.source.hub_timeout`` (skipped entirely under ``HF_HUB_OFFLINE``), and ``describe()`` says
what was chosen and why, so every report can tell which list of models it covers. If the
Hub answered the probe but the full listing then fails, the fallback happens before the
first ref is yielded and ``describe()`` is updated to say so.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import TYPE_CHECKING

from sweeper.hub.access import probe, shown_endpoint
from sweeper.hub.http import install
from sweeper.records import ModelRef
from sweeper.settings.errors import UsageError
from sweeper.sources.base import Source
from sweeper.sources.catalog import CatalogSource
from sweeper.sources.hub import HubListingError, HubSource
from sweeper.sources.registry import source_factory
from sweeper.sources.snapshots import newest_snapshot

if TYPE_CHECKING:
    from sweeper.settings.config import SweepConfig


class AutoSource:
    """Delegates to the source it picked; ``describe`` adds ``chosen_by`` and ``why``."""

    def __init__(self, cfg: SweepConfig) -> None:
        self.cfg = cfg
        install(cfg)
        start = time.monotonic()
        problem = probe(cfg.source.hub_timeout)
        if problem is None:
            seconds = time.monotonic() - start
            self.inner: Source = HubSource(cfg)
            self.why = f"Hub answered at {shown_endpoint()} in {seconds:.2f} s"
        else:
            self.inner, self.why = _offline_choice(cfg, f"Hub unreachable ({problem})")

    @property
    def streaming(self) -> bool:
        """Whether refs arrive while the listing is still running (the Hub's do)."""
        return bool(getattr(self.inner, "streaming", False))

    @property
    def name(self) -> str:
        """The name of the source actually used (hub, catalog or zoo)."""
        return self.inner.name

    def refs(self) -> Iterator[ModelRef]:
        """The chosen source's refs; a Hub listing failure falls back before any ref."""
        if isinstance(self.inner, HubSource):
            try:
                self.inner.start()
            except HubListingError as exc:
                self.inner, self.why = _offline_choice(self.cfg, f"Hub listing failed ({exc})")
        yield from self.inner.refs()

    def describe(self) -> dict[str, str]:
        """The chosen source's description plus ``chosen_by: auto`` and ``why``."""
        return {**self.inner.describe(), "chosen_by": "auto", "why": self.why}


def _offline_choice(cfg: SweepConfig, problem: str) -> tuple[Source, str]:
    """The newest saved snapshot, else the zoo; with the reason to record."""
    snapshot = newest_snapshot()
    if snapshot is not None:
        return CatalogSource(snapshot, source_label="snapshot"), f"{problem}; newest saved snapshot {snapshot.name}"
    try:
        zoo = source_factory("zoo")
    except (UsageError, ImportError):
        raise UsageError(f"no source available: {problem}; no saved snapshot; zoo source not installed") from None
    return zoo(cfg), f"{problem}; no saved snapshot"


def auto_source(cfg: SweepConfig) -> AutoSource:
    """The ``auto`` source (the default)."""
    return AutoSource(cfg)
