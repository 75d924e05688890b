"""Refs pulled lazily from a source that is still listing (the Hub's pages).

The sweep starts checking rank 1 while page 20 of the listing is on its way. The stream
keeps rank order, yields each model id once, and skips what the store already holds. A
listing that breaks off part way ends the stream instead of the sweep: the models already
handed out finish and are written, then the driver reports ``error`` (a rerun resumes
both the records and the listing).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator

from sweeper.records import ModelRef


class RefStream:
    """Deduplicated refs in source order; ``count``, ``skipped`` and ``error`` once drained."""

    def __init__(self, refs: Iterable[ModelRef], *, expected: int | None = None) -> None:
        self._refs = iter(refs)
        self._head: list[ModelRef] = []
        self.expected = expected  # how many the source will list, when it says
        self.seen: set[str] = set()
        self.count = 0  # distinct refs pulled so far
        self.skipped = 0  # of those, already done in the store
        self.error: Exception | None = None
        self.exhausted = False
        self.describe: Callable[[], dict[str, str]] | None = None  # the source's, read once drained

    def first(self) -> ModelRef | None:
        """The first ref (pulled now, so a listing that fails at once raises here)."""
        if not self._head:
            ref = self._next_new()
            if ref is None:
                return None
            self._head.append(ref)
        return self._head[0]

    def todo(self, done: set[str]) -> Iterator[ModelRef]:
        """The refs not in ``done``, as they arrive; a listing failure ends the stream."""
        while True:
            if self._head:
                ref: ModelRef | None = self._head.pop()
            else:
                try:
                    ref = self._next_new()
                except Exception as exc:  # noqa: BLE001 - kept and re-raised by the driver after the run
                    self.error = exc
                    return
            if ref is None:
                return
            if ref.key in done:
                self.skipped += 1
                continue
            yield ref

    def _next_new(self) -> ModelRef | None:
        for ref in self._refs:
            if ref.key not in self.seen:  # a listing naming an id twice still yields one record
                self.seen.add(ref.key)
                self.count += 1
                return ref
        self.exhausted = True
        return None
