"""A real two-node Ray cluster on this machine, started with the project's own ``ray`` CLI.

Token authentication is on, as ``ray start`` turns it on for a user: the cluster's HOME
holds ``~/.ray/auth_token``, which ``ray start`` finds; clients given the same HOME (the
sweep, ``ray job submit``) find it the same way with no Ray variable set. A start that
would leave authentication off fails (``require_auth``).

Every port is picked free (other Ray sessions may run beside this one), and every process
the cluster starts is found by the cluster's temp folder (in its command line, working
directory or inherited TMPDIR, or as a child of such a process) and ended by pid: never
``ray stop``, which would end every Ray session of this user, nor a kill by name.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import shutil
import socket
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import grpc
import psutil
import pytest
from ray.core.generated import gcs_service_pb2, gcs_service_pb2_grpc

REPO = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent
RAY = BIN / "ray"
START_TIMEOUT_S = 180


@dataclass(frozen=True)
class LocalCluster:
    """Where the cluster answers and the environment its clients need."""

    address: str  # GCS host:port, for ``sweep --address``
    client: str  # ray://host:port of the head's Ray Client server
    dashboard: str | None  # http://host:port of the jobs API, when started with one
    temp: str  # every process of the cluster names this folder
    env: dict[str, str]  # HOME holds the cluster's token in .ray/auth_token
    token: str  # to check that no output holds it


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


LOCAL_CONNECT = (  # what a sweep without --address does first, then how many CPUs it got
    "import ray; from sweeper.settings.config import SweepConfig; from sweeper.executors.ray_connect import connect;"
    "connect(SweepConfig()); print('cpus', ray.cluster_resources().get('CPU')); ray.shutdown()"
)


def connect_without_address(env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """Run the sweep's Ray connection with no ``--address`` in a fresh process with ``env``."""
    return subprocess.run([sys.executable, "-c", LOCAL_CONNECT], env=env, capture_output=True, text=True, timeout=180)


def _node_ports() -> list[str]:
    # Fixed defaults (52365, 10001, ...) would collide with another node or session.
    return [f"--dashboard-agent-listen-port={free_port()}", f"--dashboard-agent-grpc-port={free_port()}",
            f"--metrics-export-port={free_port()}", f"--runtime-env-agent-port={free_port()}"]


def _start(args: list[str], env: dict[str, str]) -> None:
    done = subprocess.run([str(RAY), "start", *args], env=env, capture_output=True, text=True, timeout=START_TIMEOUT_S)
    if done.returncode != 0:
        raise RuntimeError(f"ray start failed ({done.returncode}): {done.stderr[-2000:]}")


def require_auth(address: str) -> None:
    """Fail unless the GCS at ``address`` refuses a call that carries no token."""
    with grpc.insecure_channel(address) as channel:
        try:
            gcs_service_pb2_grpc.NodeInfoGcsServiceStub(channel).GetClusterId(gcs_service_pb2.GetClusterIdRequest(), timeout=10)
        except grpc.RpcError as exc:
            if exc.code() == grpc.StatusCode.UNAUTHENTICATED:
                return
            raise RuntimeError(f"cluster at {address} did not answer: {exc.code()} {exc.details()}") from None
    raise RuntimeError(f"cluster at {address} runs without token authentication")


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
    # HOME: the cluster's own ~/.ray/auth_token (this machine's belongs to other Ray
    # sessions); no RAY_AUTH_* variable, as a user has none. PATH: a job's entrypoint
    # (`sweep`) runs in the nodes' environment.
    token = secrets.token_hex(32)
    (Path(temp) / ".ray").mkdir()
    (Path(temp) / ".ray" / "auth_token").write_text(token)
    env = {k: v for k, v in os.environ.items() if not k.startswith("RAY_AUTH_")}
    env.update({"PYTHONPATH": str(REPO), "RAY_USAGE_STATS_ENABLED": "0", "TMPDIR": temp, "HOME": temp,
                "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}"})
    common = ["--num-cpus=1", "--node-ip-address=127.0.0.1", "--disable-usage-stats"]
    client_port = free_port()
    head = [f"--port={port}", f"--temp-dir={temp}", f"--ray-client-server-port={client_port}"]
    url = None
    if dashboard:  # the jobs API (`ray job submit`) lives in the dashboard: ray[default]
        dash_port = free_port()
        head += ["--include-dashboard=true", "--dashboard-host=127.0.0.1", f"--dashboard-port={dash_port}"]
        url = f"http://127.0.0.1:{dash_port}"
    else:
        head.append("--include-dashboard=false")
    try:
        _start(["--head", *head, *_node_ports(), *common], env)
        require_auth(f"127.0.0.1:{port}")
        # `ray start --address` (a node joining) turns token mode on only when told to.
        second = [f"--address=127.0.0.1:{port}", '--resources={"second_node": 1}', *_node_ports(), *common]
        _start(second, {**env, "RAY_AUTH_MODE": "token"})
        yield LocalCluster(address=f"127.0.0.1:{port}", client=f"ray://127.0.0.1:{client_port}", dashboard=url, temp=temp, env=env, token=token)
    finally:
        left = _end(temp)
    assert not left, f"processes left behind: {left}"  # reached only when the test itself ended well
