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


def _trnsim_hosted() -> bool:
    """Whether trnsim runs beside this torch (``sweeper.devices.trnsim.TESTED_TORCH``)."""
    if _HOSTED:
        return _HOSTED[0]
    try:
        import sweeper.devices.trnsim  # noqa: F401 - registers the device, as a sweep would
    except ImportError as exc:
        if "trnsim runs on torch" not in str(exc):
            raise
        _HOSTED.append(False)
    else:
        _HOSTED.append(True)
    return _HOSTED[0]


_HOSTED: list[bool] = []


# What the trnsim package says, on import, beside a torch it is not tested with (a part that
# survives pytest's shortening of a long message).
TRNSIM_TOO_OLD = "the release it is tested on; this is torch"
_LEFT_OUT: list[str] = []


def pytest_ignore_collect(collection_path: Path, config) -> bool | None:
    """Beside a torch trnsim is not tested with (``make test-lowest``), a test file that
    imports trnsim at its top is not collected; a test that reaches trnsim later is
    skipped (``pytest_runtest_makereport``). The summary names both."""
    if collection_path.suffix != ".py" or collection_path.name == "conftest.py" or _trnsim_hosted():
        return None
    if _imports_trnsim_at_top(collection_path):
        _LEFT_OUT.append(collection_path.name)
        return True
    return None


def _imports_trnsim_at_top(path: Path) -> bool:
    import ast

    tree = ast.parse(path.read_text(encoding="utf-8"))
    for node in tree.body:
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("sweeper.devices.trnsim"):
            return True
        if isinstance(node, ast.Import) and any(a.name.startswith("sweeper.devices.trnsim") for a in node.names):
            return True
        if isinstance(node, ast.ImportFrom) and node.module == "sweeper.devices" and any(a.name == "trnsim" for a in node.names):
            return True
    return False


# Tests of one group run on one worker of a parallel run (``pytest -n``, ``--dist
# loadgroup``), one after another; groups run beside each other and beside every other test.
# "ray": the tests that share one local Ray session per worker (``ray_session``): one worker
# starts it once. The others start processes of their own on free ports (a fake GCS, a
# private Ray in its own temp folder, a two-node cluster, a wheel installed in a fresh venv
# that sweeps without Ray), so they need no Ray session and can run beside it.
SERIAL_GROUPS = {
    "ray": ("executors/test_ray_executor", "executors/test_ray_scheduling_scale", "executors/test_running_models"),
    "ray-connect": ("executors/test_ray_connect",),
    "ray-cluster": ("executors/test_two_node_cluster", "executors/test_job_submit"),
    "install": ("core/test_install",),
    "browser": ("report/test_report_page",),
}


def _serial_group(path: Path) -> str | None:
    """The group a test file's tests run in together, or None."""
    relative = path.as_posix().split("/tests/", 1)[-1]
    return next((group for group, prefixes in SERIAL_GROUPS.items() if relative.startswith(prefixes)), None)


def pytest_collection_modifyitems(config, items) -> None:
    """Tests of one serial group share a worker under ``pytest -n``; beside a torch trnsim
    is not tested with, a test parametrized with the trnsim device skips."""
    for item in items:
        group = _serial_group(Path(str(item.path)))
        if group is None and "ray_session" in getattr(item, "fixturenames", ()):
            group = "ray"  # a test of another file on the shared session joins the worker that holds it
        if group is not None:
            item.add_marker(pytest.mark.xdist_group(group))
    if _trnsim_hosted():
        return
    skip = pytest.mark.skip(reason="trnsim is not tested with this torch")
    for item in items:
        params = getattr(getattr(item, "callspec", None), "params", {})
        if any(value == "trnsim" for value in params.values() if isinstance(value, str)):
            item.add_marker(skip)


class _TrnsimNeedsNewerTorch:
    """A meta-path finder that turns an import of trnsim, in a test, into that test's skip."""

    def find_spec(self, name, path=None, target=None):
        if name == "sweeper.devices.trnsim":
            pytest.skip("trnsim is not tested with this torch")
        return None


@pytest.fixture(autouse=True)
def _skip_where_trnsim_is_reached():
    if _trnsim_hosted():
        yield
        return
    import sys

    finder = _TrnsimNeedsNewerTorch()
    sys.meta_path.insert(0, finder)
    try:
        yield
    finally:
        sys.meta_path.remove(finder)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    """A test that reached trnsim beside a torch it cannot run on is skipped, saying why."""
    outcome = yield
    report = outcome.get_result()
    if report.failed and not _trnsim_hosted() and TRNSIM_TOO_OLD in str(report.longrepr):
        report.outcome = "skipped"
        report.longrepr = (str(item.path), item.location[1] or 0, "Skipped: trnsim is not tested with this torch")


def pytest_report_header(config) -> str | None:
    if _trnsim_hosted():
        return None
    import torch

    return f"torch {torch.__version__}: trnsim is not tested with it; the tests that use it are skipped"


def pytest_terminal_summary(terminalreporter) -> None:
    if _LEFT_OUT:
        terminalreporter.write_line(f"not collected (they import trnsim, which is not tested with this torch): {len(_LEFT_OUT)} files: "
                                    f"{', '.join(sorted(_LEFT_OUT))}")


@pytest.fixture(scope="session", autouse=True)
def _trnsim_before_any_backward() -> None:
    """Register trnsim before any test runs a backward pass: PyTorch's autograd engine
    sizes its device queues at the process's first backward, so tests of the device
    must not depend on running before the CPU tests do."""
    if _trnsim_hosted():
        import sweeper.devices.trnsim  # noqa: F401


@pytest.fixture(autouse=True)
def _dynamo_defaults():
    """Each test starts with Dynamo's automatic dynamic shapes on, as a fresh worker of a
    cpu or cuda sweep has them: a trnsim check earlier in this process turns them off for
    the whole process, as its static-shape profile asks (a trnsim check turns them off
    again when it sets its device up)."""
    import sys

    config = sys.modules.get("torch._dynamo.config")
    if config is not None:
        config.automatic_dynamic_shapes = True
    yield


@pytest.fixture(autouse=True)
def _offline_hub(monkeypatch, tmp_path_factory):
    """Tests never reach the real Hub and never share an HF cache."""
    monkeypatch.setenv("HF_HUB_OFFLINE", os.environ.get("HF_HUB_OFFLINE", "1"))
    monkeypatch.setenv("HF_HOME", str(tmp_path_factory.mktemp("hf_home")))
    monkeypatch.setenv("RAY_USAGE_STATS_ENABLED", "0")
