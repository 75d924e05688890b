"""The Hub listing against a misbehaving loopback Hub: retries, backoff, resume, streaming."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
from hub_faults import RESET, Fault
from hub_fixtures import populate
from hub_server import HubServer

from sweeper.hub import http as hub_http
from sweeper.records import ModelRecord, ModelRef, Status, base_record
from sweeper.runner import run_sweep
from sweeper.settings.config import SweepConfig
from sweeper.sources.catalog import CatalogSource
from sweeper.sources.hub import HubListingError, HubSource, _known_model_types
from sweeper.sources.hub_listing import ListingJournal
from sweeper.storage.store import read_records

# Short backoff so the tests run in a blink; the schedule's shape is what they check.
FAST = {"hub_backoff_s": 0.02}


@pytest.fixture
def sleeps(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    """Every backoff sleep the transport takes (still slept, so the clock stays honest)."""
    taken: list[float] = []

    def sleep(seconds: float) -> None:
        taken.append(seconds)
        time.sleep(seconds)

    monkeypatch.setattr(hub_http, "_sleep", sleep)
    return taken


def listing_calls(server: HubServer) -> list[tuple[str, int]]:
    return [(path, status) for _, path, status in server.log if path.startswith("/api/models?sort=")]


def hub_cfg(top: int, **changes: object) -> SweepConfig:
    return SweepConfig.of(source="hub", top=top, **FAST, **changes)  # type: ignore[arg-type]


def test_rate_limited_listing_waits_as_asked(hub_server: HubServer, sleeps: list[float]) -> None:
    populate(hub_server, 7)
    hub_server.faults.add(Fault(429, path=r"sort=downloads", count=2, retry_after="0.3"))
    _known_model_types()  # imports transformers once, outside the timing
    start = time.monotonic()
    refs = list(HubSource(hub_cfg(7)).refs())
    elapsed = time.monotonic() - start
    assert [r.rank for r in refs] == list(range(1, 8))
    assert [s for _, s in listing_calls(hub_server)] == [429, 429, 200, 200, 200]  # 3 pages, 2 retries
    assert len(sleeps) == 2 and all(0.3 <= s <= 0.3 + 0.1 * 0.04 for s in sleeps)
    assert elapsed < sum(sleeps) + 1.5  # waited what was asked, and not much more: no busy loop


def test_server_errors_back_off_exponentially(hub_server: HubServer, sleeps: list[float]) -> None:
    populate(hub_server, 3)
    hub_server.faults.add(Fault(503, path=r"sort=downloads", count=4))
    assert len(list(HubSource(hub_cfg(3)).refs())) == 3
    assert [s for _, s in listing_calls(hub_server)] == [503] * 4 + [200]
    base = FAST["hub_backoff_s"]
    for retry, slept in enumerate(sleeps, start=1):  # equal jitter: half to all of base * 2^(n-1)
        assert base * 2 ** (retry - 1) / 2 <= slept <= base * 2 ** (retry - 1)


def test_connection_reset_and_slow_answers(hub_server: HubServer, sleeps: list[float]) -> None:
    populate(hub_server, 6)
    hub_server.faults.add(Fault(RESET, path=r"offset=3", count=1))
    hub_server.faults.add(Fault(None, path=r"sort=downloads&limit=6&", count=1, delay_s=0.4))
    refs = list(HubSource(hub_cfg(6)).refs())
    assert [r.model_id for r in refs] == [f"org/model-{i}" for i in range(6)]
    calls = listing_calls(hub_server)
    assert [s for _, s in calls] == [200, RESET, 200]  # the slow page once, the reset page twice
    assert len(sleeps) == 1


def test_a_hub_that_never_recovers_fails_with_tries_and_status(hub_server: HubServer, sleeps: list[float]) -> None:
    populate(hub_server, 3)
    hub_server.faults.add(Fault(503, path=r"sort=downloads"))
    with pytest.raises(HubListingError, match=r"gave up after 3 tries, last HTTP 503"):
        list(HubSource(hub_cfg(3, hub_tries=3)).refs())
    assert len(listing_calls(hub_server)) == 3 and len(sleeps) == 2  # bounded: nothing more was sent


def test_interrupted_listing_resumes_from_its_cursor(hub_server: HubServer, snapshot_cache: Path) -> None:
    populate(hub_server, 20)
    hub_server.faults.add(Fault(RESET, path=r"offset=9"))
    got: list[ModelRef] = []
    with pytest.raises(HubListingError, match=r"failed after 9 models: .*rerun to continue"):
        for ref in HubSource(hub_cfg(20, hub_tries=2)).refs():
            got.append(ref)
    assert [r.rank for r in got] == list(range(1, 10))  # what streamed before the break was usable
    hub_server.faults.clear()
    hub_server.log.clear()
    source = HubSource(hub_cfg(20))
    refs = list(source.refs())
    assert [r.rank for r in refs] == list(range(1, 21))
    assert [r.model_id for r in refs] == [f"org/model-{i}" for i in range(20)]
    assert source.describe()["resumed_rows"] == "9"
    assert all("offset=" in path and int(path.rsplit("offset=", 1)[1]) >= 9 for path, _ in listing_calls(hub_server))
    saved = Path(source.describe()["snapshot"])
    assert [r.model_id for r in CatalogSource(saved).refs()] == [r.model_id for r in refs]
    assert not list(snapshot_cache.glob(".hub-*"))  # the journal is gone once the listing is whole


def test_journal_keeps_only_rows_its_cursor_vouches_for(tmp_path: Path) -> None:
    journal = ListingJournal(tmp_path, "query")
    journal.append([{"id": "a", "rank": 1}, {"id": "b", "rank": 2}], "http://hub/next?cursor=2")
    with journal.rows_path.open("a") as handle:  # a page written, then killed before the cursor moved
        handle.write(json.dumps({"id": "c", "rank": 3}) + "\n" + '{"id": "d", "ra')
    rows, next_url = ListingJournal(tmp_path, "query").resume()
    assert [r["id"] for r in rows] == ["a", "b"] and next_url == "http://hub/next?cursor=2"
    assert ListingJournal(tmp_path, "another query").resume() == ([], None)


def _quick_check(server: HubServer, pages_seen: list[int]):
    def check(ref: ModelRef, cfg: SweepConfig) -> ModelRecord:
        pages_seen.append(len(listing_calls(server)))
        return base_record(ref, sweep_id="", device=cfg.device.spec, status=Status.PASS, weights=cfg.materialise.weights)

    return check


def test_sweep_checks_models_while_the_listing_streams(hub_server: HubServer, tmp_path: Path) -> None:
    populate(hub_server, 12)  # 4 pages of 3
    pages_seen: list[int] = []
    cfg = hub_cfg(12, executor="inline", out=str(tmp_path / "run"))
    result = run_sweep(cfg, check=_quick_check(hub_server, pages_seen), quiet=True, write_report=False)
    assert result.total == 12 and pages_seen[0] == 1 and pages_seen[-1] == 4
    records = read_records(tmp_path / "run")
    assert [r.rank for r in records] == list(range(1, 13))  # rank order, each once
    meta = json.loads((tmp_path / "run" / "sweep.json").read_text())
    assert meta["total"] == 12 and meta["source"]["rows"] == "12"


def test_sweep_whose_listing_breaks_resumes_exactly_once(hub_server: HubServer, tmp_path: Path) -> None:
    populate(hub_server, 12)
    hub_server.faults.add(Fault(503, path=r"offset=6"))
    cfg = hub_cfg(12, executor="inline", out=str(tmp_path / "run"), hub_tries=2)
    with pytest.raises(HubListingError, match="failed after 6 models"):
        run_sweep(cfg, check=_quick_check(hub_server, []), quiet=True, write_report=False)
    assert [r.rank for r in read_records(tmp_path / "run")] == list(range(1, 7))  # kept, not lost
    hub_server.faults.clear()
    checked: list[int] = []
    result = run_sweep(cfg, check=_quick_check(hub_server, checked), quiet=True, write_report=False)
    records = read_records(tmp_path / "run")
    assert sorted(r.rank for r in records) == list(range(1, 13)) and len(checked) == 6
    assert result.total == 12 and result.skipped_done == 6
