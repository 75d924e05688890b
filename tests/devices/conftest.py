"""Fixtures for the trnsim tests: the registered backend and clean compile state."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
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
    from sweeper.devices.trnsim import lowercache

    trnsim.apply_profile(trnsim.load_profile(None))
    torch._dynamo.reset()
    torch._dynamo.utils.counters.clear()
    lowercache.configure(None, salt="")  # a device a test set up shares no verdicts with the next
    yield
    trnsim.apply_profile(trnsim.load_profile(None))
    lowercache.configure(None, salt="")


@pytest.fixture
def lowering(trnsim: Any) -> Iterator[Any]:
    """``trnsim.lowering`` with no verdicts kept from earlier tests (nor left to later ones)."""
    from sweeper.devices.trnsim import lowering as module

    module.clear_cache()
    yield module
    module.clear_cache()


@pytest.fixture(params=["server", "forked child"])
def runaway_importer(request: pytest.FixtureRequest, trnsim: Any, monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    """Install a stand-in for Torch-MLIR's import (a function of ``lowering_runaways``,
    by name) where graphs are lowered: the lowering server (started anew with it) or, with
    the server off, the forked child. Each test runs both ways."""
    from sweeper.devices.trnsim import lowering, lowerserver

    def install(name: str) -> None:
        import lowering_runaways

        if request.param == "server":
            lowerserver.shutdown()
            here = str(Path(lowering_runaways.__file__).parent)
            monkeypatch.setenv("PYTHONPATH", os.pathsep.join([here, os.environ.get("PYTHONPATH", "")]))
            monkeypatch.setenv("TRNSIM_LOWERING_SERVER_IMPORTER", f"lowering_runaways:{name}")
        else:
            monkeypatch.setitem(lowerserver._STATE, "unusable", True)
            monkeypatch.setattr(lowering, "_import", getattr(lowering_runaways, name))

    yield install
    lowerserver.shutdown()  # the next test's server has no stand-in
