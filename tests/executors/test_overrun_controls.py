"""A crash, timeout or oom of a device stage is the device's only when the same stage,
rerun on the CPU in a fresh worker under the same limits, passes (real worker processes)."""

from __future__ import annotations

from executor_faults import ControlledCheck, collect, fault_check, refs

from sweeper.executors.process import ProcessExecutor
from sweeper.records import Origin, Outcome, ReasonKind, Status
from sweeper.settings.config import SweepConfig


def _one(name: str, check, **settings) -> object:
    cfg = SweepConfig.of(device="trnsim", workers=1, **settings)
    got = collect(ProcessExecutor(cfg), refs(name, "after"), cfg, check)
    by = {r.model_id: r for r in got}
    assert by["after"].status is Status.PASS, by["after"].reason  # the sweep goes on
    return by[name]


def test_a_host_memory_overrun_the_cpu_repeats_is_the_harness():
    """facebook/sam2-hiera-large: the worker grew past --memory-limit-mb in backward and the
    record blamed the device with no control. The CPU needs as much: host-side, ours."""
    record = _one("fault/oom-1", ControlledCheck("same"), memory_limit_mb=300, timeout=30)
    assert (record.status, record.reason.kind, record.reason.stage) == (Status.CRASH, ReasonKind.OOM, "backward")
    assert record.reason.origin is Origin.HARNESS, record.reason
    assert record.control["stage"] == "backward" and record.control["status"] == "crash"
    assert "host-side" in record.reason.message and "--memory-limit-mb" in record.reason.message
    assert record.stages["backward"].reason.origin is Origin.HARNESS
    assert all(b.origin is Origin.HARNESS for b in record.blockers)
    assert record.outcome is Outcome.HARNESS  # decided again after the control, not on the crash alone


def test_the_control_holds_the_cpu_reference_its_device_run_held():
    """facebook/sam2-hiera-large: the device run's worker held the CPU reference (output and
    gradients, for numerics) through its device stages; the control did not, passed in less
    memory, and the overrun was blamed on the device. With the reference held by both, the
    overrun is host-side work our limit does not fit: the harness's."""
    from heavy_reference import HeavyChecker

    from sweeper.executors import breadcrumbs

    # Measured (MiB): the load stage's CPU references peak at ~1450-1630 (by host), the
    # device run and the control holding the reference ~1900-2100, a control without it
    # ~1080: a 1750 limit sits between the references' peak and what holding them costs.
    cfg = SweepConfig.of(device="trnsim", workers=1, memory_limit_mb=1750, timeout=120,
                         stages=("load", "to_device", "forward", "backward"))
    got = collect(ProcessExecutor(cfg), refs("heavy/reference"), cfg, HeavyChecker.for_settings(cfg, on_stage=breadcrumbs.mark))
    record = got[0]
    assert (record.status, record.reason.kind) == (Status.CRASH, ReasonKind.OOM), (record.reason, record.notes)
    assert record.control is not None and record.control["status"] == "crash", (record.reason, record.control)
    assert record.reason.origin is Origin.HARNESS and "host-side" in record.reason.message
    assert record.outcome is Outcome.HARNESS


def test_an_overrun_the_cpu_does_not_repeat_is_the_devices():
    record = _one("fault/oom-1", ControlledCheck("pass"), memory_limit_mb=300, timeout=30)
    assert (record.reason.kind, record.reason.origin) == (ReasonKind.OOM, Origin.DEVICE)
    assert record.control["status"] == "pass"
    assert record.control["peak_rss_mb"] > 0  # the fresh worker's own peak, beside the device run's overrun
    assert record.outcome is Outcome.DEVICE


def test_a_timeout_the_cpu_repeats_is_the_harness():
    record = _one("fault/hang-1", ControlledCheck("same"), timeout=2)
    assert (record.status, record.reason.kind, record.reason.origin) == (Status.TIMEOUT, ReasonKind.TIMEOUT, Origin.HARNESS)
    assert record.control["status"] == "timeout"


def test_a_crash_with_no_control_to_prove_it_is_not_the_devices():
    """A check without a CPU control (a plain function): a crash in a device stage is
    unproven, so it is never counted against the device."""
    record = _one("fault/segfault-1", fault_check, timeout=30)
    assert (record.reason.kind, record.reason.origin) == (ReasonKind.CRASH, Origin.HARNESS)
    assert record.control is None and "no CPU control" in record.reason.message
    assert record.outcome is Outcome.HARNESS


def test_a_forked_child_is_charged_only_the_memory_it_does_not_share(tmp_path):
    """descript/dac_44khz: a blame probe forked from a big worker counted the worker's pages
    again (RSS), so the worker looked twice its size and was killed as out of memory."""
    import os
    import signal
    import time

    import psutil

    from sweeper.executors.slot import WorkerSlot

    held = bytearray(200 * 1024 * 1024)  # touched: resident in this process and shared with the fork
    for i in range(0, len(held), 4096):
        held[i] = 1
    pid = os.fork()
    if pid == 0:
        time.sleep(30)
        os._exit(0)
    try:
        slot = WorkerSlot(SweepConfig(), b"", workdir=tmp_path)
        me = psutil.Process()
        slot._ps, slot._kids, slot._next_kids_scan = me, [psutil.Process(pid)], time.monotonic() + 60
        slot.proc = type("P", (), {"pid": os.getpid()})()
        charged = slot._rss_mb()
        assert charged < me.memory_info().rss / 2**20 + 100, charged
    finally:
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
