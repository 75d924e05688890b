"""The bounded submission window of a remote executor (kept free of Ray so it is easy to test).

``Window`` hands out chunks of refs: refs to retry first, then fresh ones pulled lazily from
the (possibly 100,000-long) iterable, so only ``max_in_flight`` refs are ever held. Chunks
grow while models are fast (a trivial check, a cached failure) so per-call overhead is
amortised, and stay at one model while models take seconds, so records stream back as
they finish. It also counts infrastructure retries per ref.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field

from sweeper.records import ModelRef

TARGET_CALL_S = 0.5  # aim for calls about this long once models are fast
MAX_CHUNK = 64
DEPTH = 2  # calls queued per worker: the next chunk is there when the current one ends


@dataclass
class Call:
    """One remote call: a chunk of refs on one worker."""

    refs: list[ModelRef]
    worker: int
    submitted: float
    started: float | None = None  # when it became the worker's running call
    handle: object = field(default=None, repr=False)


class Window:
    """Lazy ref supply with retries first, adaptive chunk size and an in-flight cap."""

    def __init__(self, refs: Iterable[ModelRef], *, workers: int, max_in_flight: int | None, retries: int) -> None:
        self._refs: Iterator[ModelRef] = iter(refs)
        self._retry: deque[ModelRef] = deque()
        self.exhausted = False
        self.retries = retries
        self.attempts: dict[str, int] = {}
        cap = max_in_flight or workers * DEPTH * MAX_CHUNK
        self.max_in_flight = max(1, cap)
        self.max_chunk = max(1, min(MAX_CHUNK, self.max_in_flight // max(1, workers * DEPTH)))
        self.in_flight = 0
        self._per_model_s: float | None = None

    @property
    def chunk_size(self) -> int:
        """Refs per call: one while models are slow or unmeasured, more as they prove fast."""
        if self._per_model_s is None:
            return 1
        return max(1, min(self.max_chunk, int(TARGET_CALL_S / max(self._per_model_s, 1e-6))))

    def take(self) -> list[ModelRef]:
        """The next chunk (empty when nothing is left or the window is full)."""
        size = min(self.chunk_size, self.max_in_flight - self.in_flight)
        chunk: list[ModelRef] = []
        while len(chunk) < size and self._retry:
            chunk.append(self._retry.popleft())
        while len(chunk) < size and not self.exhausted:
            ref = next(self._refs, None)
            if ref is None:
                self.exhausted = True
            else:
                chunk.append(ref)
        self.in_flight += len(chunk)
        return chunk

    @property
    def drained(self) -> bool:
        """Nothing left to hand out (calls may still be running)."""
        return self.exhausted and not self._retry

    def done(self, call: Call, now: float) -> None:
        """A call came back: free its slots and learn how fast models are."""
        self.in_flight -= len(call.refs)
        for ref in call.refs:
            self.attempts.pop(ref.key, None)
        start = call.started or call.submitted
        per_model = max(0.0, now - start) / max(1, len(call.refs))
        prev = self._per_model_s
        self._per_model_s = per_model if prev is None else 0.7 * prev + 0.3 * per_model

    def give_back(self, refs: list[ModelRef]) -> None:
        """Refs of a finished call that never ran: first in line again, no attempt counted."""
        self._retry.extend(refs)

    def requeue(self, call: Call, *, ran: bool) -> list[tuple[ModelRef, int]]:
        """Put a lost call's refs back; those past ``retries`` come back as (ref, attempts).

        ``ran`` says whether the call was running when its worker was lost: only then does
        it count as an attempt (queued calls behind it never started).
        """
        self.in_flight -= len(call.refs)
        given_up: list[tuple[ModelRef, int]] = []
        for ref in call.refs:
            tries = self.attempts.get(ref.key, 0) + (1 if ran else 0)
            if tries > self.retries:
                self.attempts.pop(ref.key, None)
                given_up.append((ref, tries))
            else:
                self.attempts[ref.key] = tries
                self._retry.append(ref)
        return given_up
