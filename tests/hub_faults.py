"""Misbehaviour for the loopback Hub: rate limits, server errors, slow answers, resets.

``server.faults.add(Fault(...))`` makes requests whose path matches answer badly: the first
``count`` of them, or a seeded ``fraction`` of all of them. Faults are checked before the
routes, in the order added; each request takes at most one. Every request, faulty or not,
is in ``server.log`` (a reset as status 0), so tests can count what the client sent.
"""

from __future__ import annotations

import random
import re
import socket
import struct
import threading
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from hub_server import Request

RESET = 0  # ``status`` of a fault that drops the connection without an answer


@dataclass
class Fault:
    """One kind of misbehaviour: ``status`` (or ``RESET``) after ``delay_s`` seconds.

    ``status=None`` with a ``delay_s`` is a slow but correct answer. ``count`` bounds how
    many requests it hits; ``fraction`` hits that share of matching requests instead.
    """

    status: int | None = 503
    path: str = r".*"
    count: int | None = None
    fraction: float | None = None
    retry_after: str | None = None
    delay_s: float = 0.0
    seed: int = 0
    hits: int = 0
    _rng: random.Random = field(init=False, repr=False)

    def __post_init__(self) -> None:
        self._rng = random.Random(self.seed)
        self._pattern = re.compile(self.path)

    def takes(self, path: str) -> bool:
        """Whether this fault hits the request for ``path`` (query included); counts the hit."""
        if not self._pattern.search(path):
            return False
        if self.fraction is not None:
            hit = self._rng.random() < self.fraction
        else:
            hit = self.count is None or self.hits < self.count
        self.hits += hit
        return hit


class FaultPlan:
    """The faults a server applies, checked in order before its routes."""

    def __init__(self) -> None:
        self.faults: list[Fault] = []
        self._lock = threading.Lock()

    def add(self, fault: Fault) -> Fault:
        with self._lock:
            self.faults.append(fault)
        return fault

    def clear(self) -> None:
        with self._lock:
            self.faults.clear()

    def apply(self, request: Request) -> bool:
        """Misbehave on ``request`` if a fault takes it; ``True`` when it was answered."""
        with self._lock:
            fault = next((f for f in self.faults if f.takes(request.handler.path)), None)
        if fault is None:
            return False
        if fault.delay_s:
            time.sleep(fault.delay_s)
        if fault.status is None:
            return False  # slow, then served as usual
        if fault.status == RESET:
            _reset(request)
            return True
        headers = {"Retry-After": fault.retry_after} if fault.retry_after is not None else {}
        request.error(fault.status, "Fault", f"injected {fault.status}", headers=headers)
        return True


def _reset(request: Request) -> None:
    """Drop the connection with a TCP reset, as an overloaded proxy does."""
    handler = request.handler
    with request.server.lock:
        request.server.log.append((request.method, handler.path, RESET))
    sock: socket.socket = handler.connection
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    handler.close_connection = True
    sock.close()
