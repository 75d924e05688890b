"""Fixtures for the trnsim tests: the registered backend and clean compile state."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
import torch


@pytest.fixture(scope="session")
def trnsim() -> Any:
    """The ``sweeper.devices.trnsim`` package (importing it registers the device)."""
    import sweeper.devices.trnsim as module

    return module


@pytest.fixture(autouse=True)
def _default_profile_and_fresh_dynamo(request: pytest.FixtureRequest) -> Iterator[None]:
    """Every test starts with the default profile, no strict/collect mode, empty caches."""
    if "trnsim" not in request.fixturenames:
        yield
        return
    from sweeper.devices import trnsim

    trnsim.apply_profile(trnsim.load_profile(None))
    torch._dynamo.reset()
    torch._dynamo.utils.counters.clear()
    yield
    trnsim.apply_profile(trnsim.load_profile(None))
