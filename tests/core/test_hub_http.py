"""The node-wide Hub request rate and the retrying transport, without a server."""

from __future__ import annotations

import multiprocessing
import time
from pathlib import Path

import pytest

from sweeper.checks.classify import classify
from sweeper.hub.client import http_module
from sweeper.hub.http import HubRetriesExhausted, HubStats, RetryingTransport, RetryPolicy, retry_after_seconds
from sweeper.hub.rate import NodeRateLimiter, bucket_path
from sweeper.records import ReasonKind

httpx2 = http_module()  # httpx2 with huggingface_hub 2.x, httpx with 1.x


class FakeClock:
    """A clock that only moves when someone sleeps on it."""

    def __init__(self) -> None:
        self.now = 1_000_000.0
        self.sleeps: list[float] = []

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.now += seconds


def test_bucket_allows_a_burst_then_spaces_requests(tmp_path: Path) -> None:
    clock = FakeClock()
    limiter = NodeRateLimiter(60, tmp_path / "b", burst=3, clock=clock, sleep=clock.sleep)
    waits = [limiter.acquire() for _ in range(6)]
    assert waits[:3] == [0, 0, 0]  # the burst goes at once
    assert waits[3:] == pytest.approx([1.0, 1.0, 1.0])  # then one a second: 60 a minute
    clock.now += 10  # idle: the bucket refills, but never beyond the burst
    assert [limiter.acquire() for _ in range(4)] == pytest.approx([0, 0, 0, 1.0])


def test_pause_holds_every_limiter_on_the_endpoint(tmp_path: Path) -> None:
    clock = FakeClock()
    path = bucket_path("http://hub.example", tmp_path)
    a = NodeRateLimiter(600, path, burst=5, clock=clock, sleep=clock.sleep)
    b = NodeRateLimiter(600, path, burst=5, clock=clock, sleep=clock.sleep)
    a.pause(7.0)  # a 429 with Retry-After: 7 seen by one process
    assert b.acquire() == pytest.approx(7.0)
    assert bucket_path("http://other.example", tmp_path) != path


def _take(path: str, count: int, rpm: float) -> list[float]:
    limiter = NodeRateLimiter(rpm, Path(path), burst=1)
    stamps = []
    for _ in range(count):
        limiter.acquire()
        stamps.append(time.time())
    return stamps


def test_processes_share_one_rate(tmp_path: Path) -> None:
    """Three processes drawing 4 slots each at 600/min take >= 1.1 s, not 0.3 s."""
    ctx = multiprocessing.get_context("fork")
    path = str(tmp_path / "shared.bucket")
    with ctx.Pool(3) as pool:
        results = pool.starmap(_take, [(path, 4, 600.0)] * 3)
    stamps = sorted(t for stamps in results for t in stamps)
    assert len(stamps) == 12
    # 12 slots one interval apart: the processes did not each get their own 600 a minute.
    assert stamps[-1] - stamps[0] >= 11 * 0.1 - 0.05
    # Any 5 consecutive slots span 4 intervals (0.4 s; each process's own rate would give
    # ~0.1 s). A stamp is taken after its slot was granted, so a process descheduled on a
    # loaded host stamps late: 0.15 s of slack for that, still well above 0.1 s.
    assert all(b - a >= 4 * 0.1 - 0.15 for a, b in zip(stamps, stamps[4:]))


def test_retry_after_forms() -> None:
    assert retry_after_seconds("3") == 3.0
    assert retry_after_seconds("Wed, 21 Oct 2015 07:28:30 GMT", now=1445412480.0) == pytest.approx(30.0)
    assert retry_after_seconds("soon") is None and retry_after_seconds(None) is None


def _transport(answers: list, sleeps: list[float], *, tries: int = 4) -> tuple[RetryingTransport, list[str]]:
    """A transport over scripted answers: a status, (status, Retry-After) or an exception."""
    seen: list[str] = []

    def handler(request: httpx2.Request) -> httpx2.Response:
        seen.append(request.method)
        answer = answers.pop(0) if answers else 200
        if isinstance(answer, Exception):
            raise answer
        status, retry_after = answer if isinstance(answer, tuple) else (answer, None)
        return httpx2.Response(status, headers={"Retry-After": retry_after} if retry_after else {})

    policy = RetryPolicy(tries=tries, base_s=1.0, max_delay_s=60.0)
    transport = RetryingTransport(httpx2.MockTransport(handler), policy, None, sleep=sleeps.append,
                                  rand=lambda: 1.0, stats=HubStats())
    return transport, seen


def test_backoff_doubles_and_honours_retry_after() -> None:
    sleeps: list[float] = []
    transport, seen = _transport([503, 502, (429, "5"), 200], sleeps)
    with httpx2.Client(transport=transport) as client:
        assert client.get("http://hub.example/api/models").status_code == 200
    assert len(seen) == 4
    assert sleeps[:2] == [1.0, 2.0]  # exponential (jitter pinned at its top)
    assert 5.0 <= sleeps[2] <= 5.0 + 0.1 * 4.0  # Retry-After, plus a little spread
    assert transport.stats.retries == 3 and transport.stats.backoff_s == pytest.approx(sum(sleeps))


def test_jitter_spreads_between_half_and_full() -> None:
    policy = RetryPolicy(tries=6, base_s=1.0, max_delay_s=8.0)
    assert policy.delay(3, None, lambda: 0.0) == 2.0 and policy.delay(3, None, lambda: 1.0) == 4.0
    assert policy.delay(10, None, lambda: 1.0) == 8.0  # capped


def test_gives_up_with_tries_and_last_status() -> None:
    sleeps: list[float] = []
    transport, seen = _transport([503] * 10, sleeps, tries=3)
    with httpx2.Client(transport=transport) as client, pytest.raises(HubRetriesExhausted) as info:
        client.get("http://hub.example/org/m/resolve/main/config.json?x=1")
    assert len(seen) == 3 and len(sleeps) == 2  # no sleep after the last try
    reason = classify(info.value)
    assert reason.kind is ReasonKind.DOWNLOAD
    assert "gave up after 3 tries, last HTTP 503" in reason.message and "?x=1" not in reason.message


def test_connection_resets_are_retried_but_uploads_are_not() -> None:
    sleeps: list[float] = []
    transport, seen = _transport([httpx2.RemoteProtocolError("reset"), 200], sleeps)
    with httpx2.Client(transport=transport) as client:
        assert client.head("http://hub.example/x").status_code == 200
    assert seen == ["HEAD", "HEAD"]
    transport, seen = _transport([503, 200], sleeps)
    with httpx2.Client(transport=transport) as client:
        assert client.post("http://hub.example/api/upload", content=b"x").status_code == 503
    assert seen == ["POST"]
    transport, seen = _transport([httpx2.ReadError("reset")] * 5, sleeps, tries=2)
    with httpx2.Client(transport=transport) as client, pytest.raises(HubRetriesExhausted, match="connection reset"):
        client.get("http://hub.example/x")


@pytest.mark.parametrize(
    ("flags", "fragment"),
    [
        ({"hub_rpm": 0}, "--hub-rpm must be more than 0"),
        ({"hub_tries": 0}, "--hub-tries must be a positive whole number"),
        ({"max_params": -5}, "--max-params must be a positive whole number"),
        ({"max_download_gb": 0}, "--max-download-gb must be more than 0"),
    ],
)
def test_bad_hub_flags_are_usage_errors(flags: dict, fragment: str) -> None:
    from sweeper.settings.config import build_config
    from sweeper.settings.errors import UsageError

    with pytest.raises(UsageError, match=fragment):
        build_config(flags)


def test_bad_hub_flag_on_the_command_line_is_one_line_and_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    from sweeper.cli import main

    with pytest.raises(SystemExit) as info:
        main(["--source", "zoo", "--top", "1", "--hub-rpm", "-1", "--out", str(tmp_path / "run")])
    assert info.value.code == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("sweep: error: --hub-rpm") and "\n" not in err and not (tmp_path / "run").exists()
