"""A worker's memory limit counts what its children write (a forked lowering) but not a
device's long-lived helper (trnsim's lowering server): that memory is the device runtime's,
bounded by the helper's own limits, and a CPU control of the same model has none."""

from __future__ import annotations

import subprocess
import sys
import time
import types

import psutil

from sweeper.devices.base import HELPER_PROCESS_MARK
from sweeper.executors.slot import WorkerSlot
from sweeper.settings.config import SweepConfig

HOLD = 300  # MiB each child writes and holds

_PARENT = f"""
import subprocess, sys, time
hold = "b = bytearray({HOLD} << 20); b[::4096] = b'x' * len(b[::4096]); import time; print('ok', flush=True); time.sleep(120)"
kids = [subprocess.Popen([sys.executable, "-c", hold, *extra], stdout=subprocess.PIPE) for extra in ([], ["{HELPER_PROCESS_MARK}"])]
for kid in kids:
    kid.stdout.readline()
print("ready", flush=True)
time.sleep(120)
"""


def test_a_device_helper_is_left_out_of_the_workers_memory(tmp_path):
    parent = subprocess.Popen([sys.executable, "-c", _PARENT], stdout=subprocess.PIPE, text=True)
    try:
        assert parent.stdout.readline().strip() == "ready"
        slot = WorkerSlot(SweepConfig.of(executor="process"), b"", workdir=tmp_path)
        slot.proc = types.SimpleNamespace(pid=parent.pid)
        own = psutil.Process(parent.pid).memory_info().rss / (1 << 20)
        counted = slot._rss_mb() - own
        assert HOLD * 0.8 < counted < HOLD * 1.5, counted  # the plain child only
        helpers = [p for p in psutil.Process(parent.pid).children() if HELPER_PROCESS_MARK in p.cmdline()]
        assert len(helpers) == 1 and helpers[0].memory_info().rss > HOLD * 0.8 * (1 << 20)
    finally:
        for kid in psutil.Process(parent.pid).children(recursive=True):
            kid.kill()
        parent.kill()
        parent.wait()
        time.sleep(0.1)
