"""Shared fixtures: the shared catalogs (skipped with a reason when absent), tiny configs."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

import sweeper  # noqa: F401 - first: it readies torchvision's import (sweeper/libraries/vision_compat.py)

REPO = Path(__file__).resolve().parent.parent
SHARED = Path(os.environ.get("SWEEPER_SHARED", REPO.parent / "shared"))
TOP1000 = SHARED / "catalogs" / "hub-top1000-2025-03.csv"
HUB_2022 = SHARED / "catalogs" / "hub-models-2022-07.csv.gz"


@pytest.fixture
def top1000_csv() -> Path:
    """The real top-1,000 Hub snapshot; tests using it skip where ../shared is absent."""
    if not TOP1000.exists():
        pytest.skip(f"shared catalog not found at {TOP1000} (clone with ../shared beside it)")
    return TOP1000


@pytest.fixture
def hub_2022_csv() -> Path:
    """The ~55,000-row 2022 Hub listing; skipped where ../shared is absent."""
    if not HUB_2022.exists():
        pytest.skip(f"shared catalog not found at {HUB_2022} (clone with ../shared beside it)")
    return HUB_2022


@pytest.fixture(scope="session", autouse=True)
def _trnsim_before_any_backward() -> None:
    """Register trnsim before any test runs a backward pass: PyTorch's autograd engine
    sizes its device queues at the process's first backward, so tests of the device
    must not depend on running before the CPU tests do."""
    import sweeper.devices.trnsim  # noqa: F401


@pytest.fixture(autouse=True)
def _offline_hub(monkeypatch, tmp_path_factory):
    """Tests never reach the real Hub and never share an HF cache."""
    monkeypatch.setenv("HF_HUB_OFFLINE", os.environ.get("HF_HUB_OFFLINE", "1"))
    monkeypatch.setenv("HF_HOME", str(tmp_path_factory.mktemp("hf_home")))
    monkeypatch.setenv("RAY_USAGE_STATS_ENABLED", "0")
