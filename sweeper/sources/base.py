"""The source plug point: where the list of models to try comes from.

A source yields ``ModelRef``s in rank order (rank 1 = most downloaded). The names
and factories live in ``sweeper.sources.registry`` (a plugin registers with
``@register_source("name")``). ``select`` applies the sweep's filters and ``--top``.
"""

from __future__ import annotations

import fnmatch
import itertools
from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING, Protocol

from sweeper.records import ModelRef
from sweeper.sources.registry import register_source, source_factory

__all__ = ["Source", "get_source", "register_source", "select"]

if TYPE_CHECKING:
    from sweeper.settings.config import SourceSettings, SweepConfig


class Source(Protocol):
    """Yields refs in rank order; ``describe`` says what was used (printed and recorded)."""

    name: str

    def refs(self) -> Iterator[ModelRef]: ...

    def describe(self) -> dict[str, str]: ...


def get_source(cfg: SweepConfig) -> Source:
    """Build the source the config names (``auto`` picks one and says which)."""
    return source_factory(cfg.source.name)(cfg)


def _matches(ref: ModelRef, cfg: SourceSettings) -> bool:
    if cfg.tasks and (ref.pipeline_tag or "") not in cfg.tasks:
        return False
    if cfg.libraries and (ref.library_name or "") not in cfg.libraries:
        return False
    if cfg.model_types and (ref.model_type or "") not in cfg.model_types:
        return False
    if cfg.include and not any(fnmatch.fnmatch(ref.model_id, pat) for pat in cfg.include):
        return False
    if cfg.exclude and any(fnmatch.fnmatch(ref.model_id, pat) for pat in cfg.exclude):
        return False
    return True


def select(refs: Iterable[ModelRef], cfg: SweepConfig) -> Iterator[ModelRef]:
    """Filter refs by the config's task/library/type/glob filters, then take ``--top``."""
    src = cfg.source
    kept = (ref for ref in refs if _matches(ref, src))
    return itertools.islice(kept, src.top) if src.top else kept
