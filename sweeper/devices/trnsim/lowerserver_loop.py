"""The lowering server's own loop (``lowerserver`` starts it in a fresh interpreter):
import Torch-MLIR once, say ready, then lower each job under its limits until stdin closes."""

from __future__ import annotations

import functools
import os
import resource
import signal
import sys
import time
from typing import Any

from sweeper.devices.trnsim.isolate import vm_bytes
from sweeper.devices.trnsim.lowerserver import EOF, RETIRE_GROWTH, Undecodable, read_message, write_message


def serve() -> None:
    """The server's loop: import, say ready, then answer jobs until stdin closes."""
    import torch

    import sweeper.devices.trnsim.lowering as lowering

    torch.set_num_threads(1)  # as a forked child ran: one thread, no pool of its own
    lowering._preload()
    importer = _importer(lowering._import)
    stdin, stdout = sys.stdin.buffer, sys.stdout.buffer
    sys.stdout = sys.stderr  # anything printed goes to stderr, never into the protocol
    _, hard = resource.getrlimit(resource.RLIMIT_AS)
    baseline = vm_bytes()
    write_message(stdout, ("ready", None))
    while True:
        job = read_message(stdin, float("inf"))
        if job is EOF or job is None:
            return
        kind, payload, extra_memory, timeout = job
        limited = functools.partial(_limited, importer=importer, extra_memory=extra_memory, hard=hard)

        # A job still running well past its caller's limit has no caller (it was killed or
        # gave up): SIGALRM's default action ends the server without a handler to run.
        signal.alarm(int(timeout) + 10)
        wall0, cpu0 = time.perf_counter(), time.process_time()
        try:
            value = limited(*payload) if kind == "import" else _judge(payload, limited)
            answer: tuple[str, Any] = ("ok", value)
        except Undecodable as exc:
            answer = ("undecodable", str(exc))
        except BaseException as exc:  # noqa: BLE001 - everything goes back to the caller, as from a child
            answer = ("error", f"{type(exc).__name__}: {exc}")
        finally:
            signal.alarm(0)
        wall, cpu = time.perf_counter() - wall0, time.process_time() - cpu0
        if answer[0] == "ok":
            answer = ("ok", (answer[1], wall, cpu, vm_bytes() - baseline > RETIRE_GROWTH))
        write_message(stdout, answer)
        if answer[0] == "error":
            return


def _importer(default: Any) -> Any:
    """``lowering._import``, or the stand-in ``TRNSIM_LOWERING_SERVER_IMPORTER`` names
    (``module:function``): the tests of the limits give the server a lowering that runs away."""
    spec = os.environ.get("TRNSIM_LOWERING_SERVER_IMPORTER", "")
    if not spec:
        return default
    import importlib

    module, _, function = spec.partition(":")
    return getattr(importlib.import_module(module), function)


def _limited(data: bytes, name: str, *, importer: Any, extra_memory: int, hard: int) -> Any:
    """``importer`` (``lowering._import``) of one wired graph with ``extra_memory`` bytes
    beyond what the server maps now (as a forked child had beyond its parent)."""
    from sweeper.devices.trnsim.graphwire import decode

    try:
        graph = decode(data)
    except Exception as exc:  # noqa: BLE001 - the graph did not travel: no verdict, lowered where it came from
        raise Undecodable(f"{type(exc).__name__}: {exc}") from exc
    limit = vm_bytes() + extra_memory
    resource.setrlimit(resource.RLIMIT_AS, (limit if hard == resource.RLIM_INFINITY else min(limit, hard), hard))
    try:
        return importer(graph, name)
    finally:
        resource.setrlimit(resource.RLIMIT_AS, (hard, hard))


def _judge(probes: list[bytes | bool], limited: Any) -> tuple[int | None, list[int]]:
    """The first probe that fails to lower alone (known verdicts taken as they are), and
    the probes that lowered, in graph order."""
    passed = []
    for i, probe in enumerate(probes):
        if probe is True:
            continue
        if probe is False or limited(probe, "probe")[0] is None:
            return i, passed
        passed.append(i)
    return None, passed
