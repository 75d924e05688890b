"""A worker lets its device warm up before the first model, and survives a device that cannot."""

from __future__ import annotations

import gc
from types import SimpleNamespace

import pytest

from sweeper.devices.base import Device
from sweeper.executors import worker


class _Device(Device):
    def __init__(self, fail: bool) -> None:
        super().__init__("fake")
        self.fail, self.warmed = fail, 0

    def warm_up(self) -> None:
        self.warmed += 1
        if self.fail:
            raise RuntimeError("no compiler here")


@pytest.fixture
def unfreeze():
    yield
    gc.unfreeze()  # the worker freezes what warming up left; a test process must not keep that


@pytest.mark.parametrize("fail", [False, True])
def test_worker_warms_its_device_once_and_freezes_what_is_left(monkeypatch, unfreeze, capsys, fail):
    import torch  # noqa: F401 - the worker freezes only once torch is loaded

    device = _Device(fail)
    worker._warm_up(SimpleNamespace(device=device))
    assert device.warmed == 1
    assert gc.get_freeze_count() > 0
    assert ("no compiler here" in capsys.readouterr().err) == fail


def test_no_device_no_warm_up():
    worker._warm_up(SimpleNamespace(device=None))  # a device that failed to set up is reported per model, not here
