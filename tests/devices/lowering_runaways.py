"""Stand-ins for Torch-MLIR's import that run away, for the tests of the lowering limits
(in the lowering server through ``TRNSIM_LOWERING_SERVER_IMPORTER``, or in a forked child)."""

from __future__ import annotations

import time
from typing import Any


def sleep_a_minute(gm: Any, name: str) -> tuple[str, list[str]]:
    """Never answers within a test's time limit."""
    time.sleep(60)
    return "never", []


def hoard_memory(gm: Any, name: str) -> tuple[str, list[str]]:
    """Allocates until the memory limit stops it."""
    hoard = []
    while True:
        hoard.append(bytearray(64 << 20))


def die(gm: Any, name: str) -> tuple[str, list[str]]:
    """Ends the process that lowers, as a crash in the compiler would."""
    import os
    import signal

    os.kill(os.getpid(), signal.SIGKILL)
    return "never", []


def dies_on_the_graph(gm: Any, name: str) -> tuple[str | None, list[str]]:
    """Ends the process without an answer on a whole graph (what a memory kill looks like);
    a single-op probe fails to legalize."""
    import os

    if name != "probe":
        os._exit(0)
    return None, ["error: failed to legalize operation 'torch.aten.sin'"]


def graph_fails_probes_hang(gm: Any, name: str) -> tuple[str | None, list[str]]:
    """The graph fails without naming an op; every probe hangs."""
    if name != "probe":
        return None, ["error: failed to legalize operation 'torch.constant.int'"]
    time.sleep(60)
    return "never", []
