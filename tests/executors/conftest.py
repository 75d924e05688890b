"""One local Ray session for the whole executors suite (starting Ray costs seconds)."""

from __future__ import annotations

import os

import pytest

from sweeper.settings.config import SweepConfig


@pytest.fixture(scope="session")
def ray_session():
    """Local Ray started the way the executor starts it; shut down after the last test."""
    ray = pytest.importorskip("ray")
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
    from sweeper.executors.ray import connect

    started = connect(SweepConfig())
    yield ray
    if started:
        ray.shutdown()
