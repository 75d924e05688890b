"""Fixtures for source tests: the loopback Hub server, and a private snapshot cache."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from hub_fixtures import serve_hub
from hub_server import HubServer


@pytest.fixture(autouse=True)
def snapshot_cache(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """Snapshots go to a per-test folder, never the user's ~/.cache."""
    cache = tmp_path / "sweeper-cache"
    monkeypatch.setenv("SWEEPER_CACHE", str(cache))
    return cache / "snapshots"


@pytest.fixture
def hub_server(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[HubServer]:
    """The loopback Hub, with the client pointed at it (see tests/hub_fixtures.py)."""
    with serve_hub(monkeypatch, tmp_path) as server:
        yield server
