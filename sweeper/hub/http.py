"""Polite Hub traffic: every request the Hub client sends is rate limited and retried.

``install(cfg)`` plugs a transport into ``huggingface_hub``'s shared HTTP client (its
``set_client_factory`` hook), so the listing, ``model_info``, ``hf_hub_download`` and
transformers' downloads all pass through it. The transport

- takes a slot from the node-wide bucket (``sweeper.hub.rate``) before each request;
- retries ``429`` and ``5xx`` answers and connection resets of reads (GET/HEAD), with
  exponential backoff and jitter, waiting at least what ``Retry-After`` asks (and holding
  the node's other processes back as long);
- after ``hub_tries`` attempts raises ``HubRetriesExhausted``: a ``download`` reason that
  says how many tries and the last status. It is not an HTTP error, so the client's own
  retry loop does not multiply the tries.
"""

from __future__ import annotations

import email.utils
import random
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from sweeper.hub.access import endpoint, redact
from sweeper.hub.client import http_module
from sweeper.records import ReasonKind
from sweeper.settings.errors import SweeperError

# The HTTP client huggingface_hub is built on: httpx2 for 2.x, httpx for 1.x.
httpx = http_module()

if TYPE_CHECKING:
    from sweeper.hub.rate import NodeRateLimiter
    from sweeper.settings.config import SweepConfig

RETRY_STATUSES = frozenset({429, 500, 502, 503, 504})
# Reads only: a retried upload could send a half-consumed body.
RETRY_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})
MAX_DELAY_S = 60.0  # the longest backoff between two tries
MAX_RETRY_AFTER_S = 300.0  # the longest Retry-After honoured as asked


class HubRetriesExhausted(SweeperError):
    """The Hub kept failing transiently; the model is an environment outcome."""

    reason_kind = ReasonKind.DOWNLOAD


@dataclass(frozen=True)
class RetryPolicy:
    """How often to try and how long to back off (``base_s`` doubles per retry)."""

    tries: int = 6
    base_s: float = 1.0
    max_delay_s: float = MAX_DELAY_S

    def delay(self, retry: int, retry_after: float | None, rand: Callable[[], float]) -> float:
        """Seconds before retry number ``retry`` (1-based): jittered, never under Retry-After."""
        ceiling = min(self.max_delay_s, self.base_s * 2 ** (retry - 1))
        jittered = ceiling * (0.5 + 0.5 * rand())  # "equal jitter": spread, never near zero
        if retry_after is None:
            return jittered
        # What the Hub asked, plus a little spread so waiting clients do not return together.
        return min(retry_after, MAX_RETRY_AFTER_S) + 0.1 * jittered


def retry_after_seconds(value: str | None, *, now: float | None = None) -> float | None:
    """``Retry-After`` as seconds: a number, or an HTTP date; ``None`` when absent or bad."""
    if not value:
        return None
    value = value.strip()
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - (time.time() if now is None else now))


@dataclass
class HubStats:
    """What this process sent: requests (tries included), retries, seconds slept."""

    requests: int = 0
    retries: int = 0
    backoff_s: float = 0.0


STATS = HubStats()


class RetryingTransport(httpx.BaseTransport):
    """Wraps a transport: rate limit every request, retry the transient failures."""

    def __init__(
        self,
        inner: Any,
        policy: RetryPolicy,
        limiter: NodeRateLimiter | None,
        *,
        sleep: Callable[[float], None] | None = None,
        rand: Callable[[], float] = random.random,
        stats: HubStats = STATS,
    ) -> None:
        self.inner = inner
        self.policy = policy
        self.limiter = limiter
        self.sleep = sleep
        self.rand = rand
        self.stats = stats

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        retryable = request.method.upper() in RETRY_METHODS
        tries = self.policy.tries if retryable else 1
        for attempt in range(1, tries + 1):
            if self.limiter is not None:
                self.limiter.acquire()
            self.stats.requests += 1
            retry_after: float | None = None
            try:
                response = self.inner.handle_request(request)
            except (httpx.RemoteProtocolError, httpx.ReadError, httpx.WriteError) as exc:
                if not retryable:
                    raise
                last = f"connection reset ({type(exc).__name__})"
                if attempt == tries:
                    raise HubRetriesExhausted(_gave_up(request, tries, last)) from exc
            else:
                if response.status_code not in RETRY_STATUSES or not retryable:
                    return response
                last = f"HTTP {response.status_code}"
                retry_after = retry_after_seconds(response.headers.get("Retry-After"))
                _discard(response)
                if attempt == tries:
                    raise HubRetriesExhausted(_gave_up(request, tries, last))
            self._back_off(attempt, retry_after)
        raise AssertionError("unreachable")  # pragma: no cover

    def _back_off(self, retry: int, retry_after: float | None) -> None:
        delay = self.policy.delay(retry, retry_after, self.rand)
        if retry_after is not None and self.limiter is not None:
            self.limiter.pause(delay)  # the Hub asked the whole node to wait
        self.stats.retries += 1
        self.stats.backoff_s += delay
        (self.sleep or _sleep)(delay)

    def close(self) -> None:
        self.inner.close()


def _sleep(seconds: float) -> None:
    """The backoff's sleep (looked up at call time, so tests can count it)."""
    time.sleep(seconds)


def _gave_up(request: httpx.Request, tries: int, last: str) -> str:
    url = request.url.copy_with(query=None)
    return redact(f"{request.method} {url}: gave up after {tries} tries, last {last}")


def _discard(response: httpx.Response) -> None:
    """Read and close a response that will be retried, so its connection is reused."""
    try:
        response.read()
    except Exception:  # noqa: BLE001 - a broken error body changes nothing: it is retried
        pass
    finally:
        response.close()


_INSTALLED: tuple[Any, ...] | None = None
_INSTALL_LOCK = threading.Lock()


def settings(cfg: SweepConfig) -> tuple[str, float, RetryPolicy]:
    """The endpoint, requests per minute and retry policy ``cfg`` asks for."""
    policy = RetryPolicy(tries=cfg.source.hub_tries, base_s=cfg.source.hub_backoff_s)
    return endpoint(), cfg.source.hub_rpm, policy


def install(cfg: SweepConfig) -> None:
    """Make the Hub client's shared HTTP client polite per ``cfg`` (idempotent, cheap)."""
    global _INSTALLED
    wanted = settings(cfg)
    if wanted == _INSTALLED:
        return
    with _INSTALL_LOCK:
        from huggingface_hub import set_client_factory

        set_client_factory(_factory(*wanted))
        _INSTALLED = wanted


def _factory(endpoint: str, rpm: float, policy: RetryPolicy) -> Callable[[], Any]:
    def make() -> Any:
        from huggingface_hub.utils._http import default_client_factory

        from sweeper.hub.rate import NodeRateLimiter, bucket_path

        limiter = NodeRateLimiter(rpm, bucket_path(endpoint))
        client = default_client_factory()
        # Wrap the default transport and any proxy mounts, keeping the client's own
        # event hooks (offline mode, request ids) and redirect handling as they are.
        client._transport = RetryingTransport(client._transport, policy, limiter)
        client._mounts = {
            pattern: RetryingTransport(mounted, policy, limiter) if mounted is not None else None
            for pattern, mounted in client._mounts.items()
        }
        return client

    return make
