"""The hub source against the loopback Hub: paginated listing, snapshot, token hygiene."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hub_fixtures import closed_port, populate
from hub_server import HubServer

from sweeper.hub.access import redact
from sweeper.settings.config import SweepConfig
from sweeper.settings.errors import UsageError
from sweeper.sources.base import get_source
from sweeper.sources.catalog import CatalogSource
from sweeper.sources.hub import HubListingError, HubSource, listing_limit

TOKEN = "hf_loopbackSecretToken123"


def test_listing_follows_pages_in_download_order(hub_server: HubServer) -> None:
    populate(hub_server)
    source = HubSource(SweepConfig.of(source="hub", top=5))
    refs = list(source.refs())
    assert [r.model_id for r in refs] == [f"org/model-{i}" for i in range(5)]
    assert [r.rank for r in refs] == [1, 2, 3, 4, 5]
    assert [r.downloads for r in refs] == [1000, 990, 980, 970, 960]
    assert refs[0].model_type == "gpt2"  # from the listing's config
    assert refs[1].model_type == "bert"  # from a tag naming a transformers model type
    assert refs[1].pipeline_tag == "text-generation" and refs[0].pipeline_tag is None
    assert refs[0].revision == hub_server.repos[("model", "org/model-0")].sha
    assert all(r.source == "hub" and r.library_name == "transformers" for r in refs)
    pages = [path for method, path, _ in hub_server.log if path.startswith("/api/models?sort=")]
    assert len(pages) == 2 and "offset=3" in pages[1]  # page size 3: the Link header was followed


def test_listing_is_saved_as_a_catalog_snapshot(hub_server: HubServer, snapshot_cache: Path) -> None:
    populate(hub_server)
    source = HubSource(SweepConfig.of(source="hub", top=4))
    refs = list(source.refs())
    saved = Path(source.describe()["snapshot"])
    assert saved.parent == snapshot_cache and saved.name.startswith("hub-") and saved.suffix == ".jsonl"
    again = list(CatalogSource(saved).refs())
    keep = ("model_id", "rank", "downloads", "pipeline_tag", "library_name", "model_type", "revision")
    assert [[getattr(r, k) for k in keep] for r in again] == [[getattr(r, k) for k in keep] for r in refs]
    assert source.describe()["rows"] == "4" and source.describe()["endpoint"] == hub_server.url


def test_token_is_sent_but_never_written(hub_server: HubServer, monkeypatch: pytest.MonkeyPatch) -> None:
    populate(hub_server)
    monkeypatch.setenv("HF_TOKEN", TOKEN)
    source = get_source(SweepConfig.of(source="hub", top=3))
    list(source.refs())
    assert f"Bearer {TOKEN}" in hub_server.auth_seen  # the token really was in use
    snapshot = Path(source.describe()["snapshot"]).read_text()
    assert TOKEN not in snapshot and TOKEN not in json.dumps(source.describe())


def test_errors_are_one_line_and_redacted(monkeypatch: pytest.MonkeyPatch, hub_server: HubServer) -> None:
    monkeypatch.setenv("HF_TOKEN", TOKEN)
    assert redact(f"bad token {TOKEN}!") == "bad token ***!"
    url = f"http://127.0.0.1:{closed_port()}"
    monkeypatch.setenv("HF_ENDPOINT", url)
    with pytest.raises(HubListingError) as info:
        list(HubSource(SweepConfig.of(source="hub", top=2)).refs())
    message = str(info.value)
    assert message.startswith(f"Hub unreachable ({url}: ") and "\n" not in message
    assert TOKEN not in message and isinstance(info.value, UsageError)


def test_offline_never_touches_the_network(hub_server: HubServer, monkeypatch: pytest.MonkeyPatch) -> None:
    populate(hub_server)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(HubListingError, match="HF_HUB_OFFLINE"):
        list(HubSource(SweepConfig.of(source="hub", top=2)).refs())
    assert hub_server.log == []


def test_empty_listing_is_an_error(hub_server: HubServer) -> None:
    with pytest.raises(HubListingError, match="returned no models"):
        list(HubSource(SweepConfig.of(source="hub", top=2)).refs())


def test_listing_limit_leaves_room_for_filters() -> None:
    assert listing_limit(SweepConfig.of(top=20)) == 20
    assert listing_limit(SweepConfig.of(top=20, tasks=("fill-mask",))) == 200
    assert listing_limit(SweepConfig()) == 1000
    assert listing_limit(SweepConfig.of(hub_limit=50)) == 50


def test_a_shorter_listing_keeps_the_longer_snapshot_of_the_day(hub_server: HubServer) -> None:
    populate(hub_server)
    long = HubSource(SweepConfig.of(source="hub", top=6))
    list(long.refs())
    short = HubSource(SweepConfig.of(source="hub", top=2))
    list(short.refs())
    saved = Path(short.describe()["snapshot"])
    assert saved == Path(long.describe()["snapshot"])
    assert len(list(CatalogSource(saved).refs())) == 6
