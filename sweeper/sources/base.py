"""The source plug point: where the list of models to try comes from.

A source yields ``ModelRef``s in rank order (rank 1 = most downloaded). Sources register
with ``@register_source("name")``; ``select`` applies the sweep's filters and ``--top``.
"""

from __future__ import annotations

import fnmatch
import itertools
from collections.abc import Callable, Iterable, Iterator
from typing import TYPE_CHECKING, Protocol

from sweeper.errors import UsageError
from sweeper.records import ModelRef

if TYPE_CHECKING:
    from sweeper.config import SweepConfig


class Source(Protocol):
    """Yields refs in rank order; ``describe`` says what was used (printed and recorded)."""

    name: str

    def refs(self) -> Iterator[ModelRef]: ...

    def describe(self) -> dict[str, str]: ...


SourceFactory = Callable[["SweepConfig"], Source]
_REGISTRY: dict[str, SourceFactory] = {}


def register_source(name: str) -> Callable[[SourceFactory], SourceFactory]:
    """Decorator adding a source factory (called with the sweep config)."""

    def wrap(factory: SourceFactory) -> SourceFactory:
        _REGISTRY[name] = factory
        return factory

    return wrap


def get_source(cfg: SweepConfig) -> Source:
    """Build the source the config names (``auto`` picks one and says which)."""
    import sweeper.sources.registry  # noqa: F401  (registers the built-in sources)

    if cfg.source not in _REGISTRY:
        raise UsageError(f"unknown source {cfg.source!r}; known: {', '.join(sorted(_REGISTRY))}")
    return _REGISTRY[cfg.source](cfg)


def _matches(ref: ModelRef, cfg: SweepConfig) -> bool:
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
    kept = (ref for ref in refs if _matches(ref, cfg))
    return itertools.islice(kept, cfg.top) if cfg.top else kept
