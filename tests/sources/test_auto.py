"""The auto source: Hub when it answers, else the newest snapshot, else the zoo, with why."""

from __future__ import annotations

import datetime as dt
import re
import socket
import time
from collections.abc import Iterator

import pytest
from hub_fixtures import closed_port, populate
from hub_server import HubServer

from sweeper.records import ModelRef
from sweeper.settings.config import SweepConfig
from sweeper.settings.errors import UsageError
from sweeper.sources import base, registry
from sweeper.sources.base import get_source
from sweeper.sources.snapshots import save_snapshot


class StandInZoo:
    """Stands in for the zoo source so these tests do not depend on the installed models."""

    name = "zoo"

    def __init__(self, cfg: SweepConfig) -> None:
        self.cfg = cfg

    def refs(self) -> Iterator[ModelRef]:
        yield ModelRef("bert", rank=1, architecture="BertModel", source="zoo")

    def describe(self) -> dict[str, str]:
        return {"name": "zoo"}


@pytest.fixture(autouse=True)
def stand_in_zoo(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(registry._REGISTRY, "zoo", StandInZoo)


def snapshot(day: str, *names: str) -> None:
    refs = [ModelRef(name, rank=i) for i, name in enumerate(names, start=1)]
    save_snapshot(refs, day=dt.date.fromisoformat(day))


def auto(**settings: object) -> base.Source:
    return get_source(SweepConfig.of(source="auto", **settings))  # type: ignore[arg-type]


def test_hub_when_it_answers(hub_server: HubServer) -> None:
    populate(hub_server, 4)
    source = auto(top=3)
    assert [r.model_id for r in source.refs()] == ["org/model-0", "org/model-1", "org/model-2"]
    info = source.describe()
    assert info["name"] == "hub" and info["chosen_by"] == "auto"
    assert info["why"].startswith(f"Hub answered at {hub_server.url} in ")
    assert "snapshot" in info  # the listing was saved for later offline runs


def test_offline_uses_newest_snapshot_without_trying(hub_server: HubServer, monkeypatch: pytest.MonkeyPatch) -> None:
    snapshot("2025-01-01", "old/a")
    snapshot("2025-02-01", "new/a", "new/b")
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    source = auto()
    assert [r.model_id for r in source.refs()] == ["new/a", "new/b"]
    info = source.describe()
    assert info["name"] == "catalog" and info["snapshot_date"] == "2025-02-01"
    assert info["why"] == "Hub unreachable (HF_HUB_OFFLINE is set); newest saved snapshot hub-2025-02-01.jsonl"
    assert hub_server.log == []  # offline means not even a probe


def test_unreachable_without_snapshot_falls_back_to_zoo(hub_server: HubServer, monkeypatch) -> None:
    url = f"http://127.0.0.1:{closed_port()}"
    monkeypatch.setenv("HF_ENDPOINT", url)
    source = auto(hub_timeout=1.0)
    assert [r.model_id for r in source.refs()] == ["bert"]
    info = source.describe()
    assert info["name"] == "zoo" and info["chosen_by"] == "auto"
    assert info["why"].startswith(f"Hub unreachable ({url}: ") and info["why"].endswith("; no saved snapshot")


def test_probe_gives_up_after_hub_timeout(hub_server: HubServer, monkeypatch: pytest.MonkeyPatch) -> None:
    snapshot("2025-03-01", "snap/a")
    with socket.socket() as silent:  # accepts connections (backlog) but never answers
        silent.bind(("127.0.0.1", 0))
        silent.listen(4)
        monkeypatch.setenv("HF_ENDPOINT", f"http://127.0.0.1:{silent.getsockname()[1]}")
        start = time.monotonic()
        source = auto(hub_timeout=0.5)
        seconds = time.monotonic() - start
    assert seconds < 3.0 and source.describe()["name"] == "catalog"
    assert "Timeout" in source.describe()["why"]


def test_listing_failure_after_probe_falls_back(hub_server: HubServer) -> None:
    populate(hub_server, 3)
    snapshot("2025-03-01", "snap/a")

    def broken_listing(req, match) -> None:  # the probe (no sort) works, the listing does not
        if "sort" in req.query:
            req.error(404, "NotFound", "listing is down")
        else:
            req.send_json([hub_server.repos[("model", "org/model-0")].info(full=False)])

    hub_server.routes.insert(0, ("GET", re.compile(r"/api/models"), broken_listing))
    source = auto(top=2)
    assert source.describe()["name"] == "hub"  # chosen by the probe
    assert [r.model_id for r in source.refs()] == ["snap/a"]
    info = source.describe()
    assert info["name"] == "catalog" and info["why"].startswith("Hub listing failed (Hub listing from ")
    assert "newest saved snapshot hub-2025-03-01.jsonl" in info["why"]


def test_nothing_available_is_a_usage_error(hub_server: HubServer, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delitem(registry._REGISTRY, "zoo")
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(UsageError, match="no saved snapshot; zoo source not installed"):
        auto()
