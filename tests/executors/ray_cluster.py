"""A real two-node Ray cluster on this machine, started with the project's own ``ray`` CLI.

Every port is picked free (other Ray sessions may run beside this one), and every process
the cluster starts is found by the cluster's temp folder (in its command line, working
directory or inherited TMPDIR, or as a child of such a process) and ended by pid: never
``ray stop``, which would end every Ray session of this user, nor a kill by name.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import socket
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import psutil
import pytest

REPO = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent
RAY = BIN / "ray"
START_TIMEOUT_S = 180


@dataclass(frozen=True)
class LocalCluster:
    """Where the cluster answers and the environment its clients need."""

    address: str  # GCS host:port, for ``sweep --address``
    dashboard: str | None  # http://host:port of the jobs API, when started with one
    temp: str  # every process of the cluster names this folder
    env: dict[str, str]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _names(temp: str, proc: psutil.Process) -> bool:
    if any(temp in part for part in proc.info["cmdline"] or []):
        return True
    try:  # the job's entrypoint and the client server name neither: their TMPDIR or cwd does
        return proc.environ().get("TMPDIR") == temp or proc.cwd().startswith(temp)
    except psutil.Error:
        return False


def processes(temp: str) -> list[psutil.Process]:
    """Every live process that belongs to the cluster in ``temp``, with all their children.

    Children count because Ray's agents retitle themselves (``ray::DashboardAgent``) over
    their command line and environment: only their parent, the raylet, names the folder.
    """
    found: dict[int, psutil.Process] = {}
    for proc in psutil.process_iter(["cmdline"]):
        try:
            if proc.pid != os.getpid() and proc.status() != psutil.STATUS_ZOMBIE and _names(temp, proc):
                found[proc.pid] = proc
                found.update((c.pid, c) for c in proc.children(recursive=True) if c.status() != psutil.STATUS_ZOMBIE)
        except (psutil.Error, TypeError):
            continue
    for proc in found.values():
        if not hasattr(proc, "info"):  # children come without the iterator's cached fields
            try:
                proc.info = {"cmdline": proc.cmdline()}
            except psutil.Error:
                proc.info = {"cmdline": []}
    return list(found.values())


def raylets(temp: str) -> list[psutil.Process]:
    """The cluster's raylets, head first."""
    procs = [p for p in processes(temp) if "raylet" in Path((p.info["cmdline"] or [""])[0]).name]
    return sorted(procs, key=lambda p: p.create_time())


def _node_ports() -> list[str]:
    # Fixed defaults (52365, 10001, ...) would collide with another node or session.
    return [f"--dashboard-agent-listen-port={free_port()}", f"--dashboard-agent-grpc-port={free_port()}",
            f"--metrics-export-port={free_port()}", f"--runtime-env-agent-port={free_port()}"]


def _start(args: list[str], env: dict[str, str]) -> None:
    done = subprocess.run([str(RAY), "start", *args], env=env, capture_output=True, text=True, timeout=START_TIMEOUT_S)
    if done.returncode != 0:
        raise RuntimeError(f"ray start failed ({done.returncode}): {done.stderr[-2000:]}")


def _end(temp: str) -> list[str]:
    """Kill the cluster's processes, wait for them, remove ``temp``; what is still alive."""
    for _ in range(3):  # a dying raylet may still have started a worker
        procs = processes(temp)
        for proc in procs:
            with contextlib.suppress(psutil.Error):
                proc.kill()
        psutil.wait_procs(procs, timeout=10)
    shutil.rmtree(temp, ignore_errors=True)
    return [" ".join((p.info["cmdline"] or [])[:2]) for p in processes(temp)]


@contextlib.contextmanager
def two_node_cluster(*, dashboard: bool = False) -> Iterator[LocalCluster]:
    """Head (1 CPU) plus a second node (1 CPU, resource ``second_node``); always torn down."""
    if not RAY.exists():
        pytest.skip("the ray CLI is not installed beside this Python")
    temp = tempfile.mkdtemp(prefix="rc-", dir="/tmp")  # short: socket paths are limited
    port = free_port()
    # HOME too: a token in ~/.ray/auth_token (from another Ray on this machine) would make
    # the head demand it from the second node. PATH: a job's entrypoint (`sweep`) runs in
    # the nodes' environment.
    env = {**os.environ, "PYTHONPATH": str(REPO), "RAY_USAGE_STATS_ENABLED": "0", "TMPDIR": temp, "HOME": temp,
           "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}"}
    common = ["--num-cpus=1", "--node-ip-address=127.0.0.1", "--disable-usage-stats"]
    head = [f"--port={port}", f"--temp-dir={temp}", f"--ray-client-server-port={free_port()}"]
    url = None
    if dashboard:  # the jobs API (`ray job submit`) lives in the dashboard: ray[default]
        dash_port = free_port()
        head += ["--include-dashboard=true", "--dashboard-host=127.0.0.1", f"--dashboard-port={dash_port}"]
        url = f"http://127.0.0.1:{dash_port}"
    else:
        head.append("--include-dashboard=false")
    try:
        _start(["--head", *head, *_node_ports(), *common], env)
        _start([f"--address=127.0.0.1:{port}", '--resources={"second_node": 1}', *_node_ports(), *common], env)
        yield LocalCluster(address=f"127.0.0.1:{port}", dashboard=url, temp=temp, env=env)
    finally:
        left = _end(temp)
    assert not left, f"processes left behind: {left}"  # reached only when the test itself ended well
