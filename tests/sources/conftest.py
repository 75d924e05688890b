"""Fixtures for source tests: the loopback Hub server, and a private snapshot cache."""

from __future__ import annotations

from pathlib import Path

import pytest
from hub_fixtures import hub_server  # noqa: F401  (the fixture, shared with other test folders)


@pytest.fixture(autouse=True)
def snapshot_cache(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """Snapshots go to a per-test folder, never the user's ~/.cache."""
    cache = tmp_path / "sweeper-cache"
    monkeypatch.setenv("SWEEPER_CACHE", str(cache))
    return cache / "snapshots"
