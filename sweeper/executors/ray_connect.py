"""Connecting the driver to Ray: a private local instance, or the cluster ``--address`` names.

Part of the Ray executor (with ``ray.py``, the only modules that import Ray).

- Without ``--address`` (or ``RAY_ADDRESS``) the sweep starts its own local instance
  (``address="local"``): a ``ray start`` head on this machine, or the current-cluster file
  a dead one left behind, is never joined by accident.
- Clusters started by Ray 2.59+ demand a token. The driver authenticates the way Ray's own
  clients do: ``RAY_AUTH_MODE=token`` and the token from ``RAY_AUTH_TOKEN``, else the file
  ``RAY_AUTH_TOKEN_PATH`` names, else ``~/.ray/auth_token`` (where ``ray start`` left it).
  When a token is there and ``RAY_AUTH_MODE`` is unset, token mode is turned on, so the
  user who started the cluster on this machine sets nothing. Workers run on the cluster's
  nodes, whose raylets hold the cluster's token.
- Before ``ray.init`` one gRPC call, bounded by ``PROBE_TIMEOUT_S``, asks the address
  whether it answers and accepts the token: ``ray.init`` itself would retry for 20 s to
  minutes and then name no cause. A failure is a ``UsageError`` (one line, exit 2) with
  the address, the cause and what to set. The token is never part of any message.
"""

from __future__ import annotations

import logging
import os
import re
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import grpc
import ray
from ray._private.grpc_utils import init_grpc_channel
from ray._raylet import AuthenticationTokenLoader, Config
from ray.core.generated import gcs_service_pb2, gcs_service_pb2_grpc, ray_client_pb2, ray_client_pb2_grpc

from sweeper.settings.errors import UsageError

if TYPE_CHECKING:
    from sweeper.settings.config import SweepConfig

PROBE_TIMEOUT_S = 5.0
LOCAL_OBJECT_STORE = 256 * 1024 * 1024  # records are small; do not reserve 30% of RAM
DEFAULT_TOKEN_FILE = Path(".ray") / "auth_token"  # under the home folder, as Ray has it
CLIENT_PORT = 10001  # Ray Client's default, when ray://HOST names none
TOKEN_HINT = (
    "set RAY_AUTH_TOKEN to the cluster's token, or RAY_AUTH_TOKEN_PATH to a file holding it, "
    "or put it in ~/.ray/auth_token (`ray get-auth-token` on the head prints it)"
)
_ADDRESS = re.compile(r"^(?P<client>ray://)?(?P<host>\[[0-9a-fA-F:.]+\]|[^:/\s]+)(?::(?P<port>\d+))?/?$")


@dataclass(frozen=True)
class Target:
    """A cluster address as the sweep was given it, and what it points at."""

    address: str  # as given: HOST:PORT, ray://HOST:PORT, auto
    endpoint: str  # host:port the probe calls
    client: bool  # ray:// (the Ray Client server) rather than the GCS


def connect(cfg: SweepConfig) -> bool:
    """Attach to ``--address`` (or ``RAY_ADDRESS``), else start a private local Ray; True if connected here."""
    if ray.is_initialized():
        return False
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
    address = cfg.execution.address or os.environ.get("RAY_ADDRESS", "").strip()
    if address:
        attach(address, origin="--address" if cfg.execution.address else "RAY_ADDRESS")
    else:
        start_local()
    return True


def start_local() -> None:
    """Start this sweep's own Ray instance, sized to the machine, whatever else runs here."""
    common = {"log_to_driver": False, "logging_level": logging.ERROR}
    # Local workers inherit the driver's environment: give them its sys.path so check
    # functions defined outside the installed package (tests, plugins) unpickle there.
    saved = os.environ.get("PYTHONPATH")
    os.environ["PYTHONPATH"] = os.pathsep.join(p for p in sys.path if p and os.path.isdir(p))
    try:
        # "local", not None: None would join the cluster a `ray start` recorded in
        # /tmp/ray/ray_current_cluster (even a dead one) and then refuse num_cpus.
        ray.init(address="local", num_cpus=os.cpu_count(), include_dashboard=False,
                 object_store_memory=LOCAL_OBJECT_STORE, **common)
    finally:
        if saved is None:
            os.environ.pop("PYTHONPATH", None)
        else:
            os.environ["PYTHONPATH"] = saved
    print(f"ray: started a private local instance ({os.cpu_count()} CPUs); "
          "a cluster running on this machine is joined only with --address", file=sys.stderr)


def attach(address: str, *, origin: str = "--address") -> None:
    """Join the cluster at ``address`` with the token Ray's clients would send; one-line errors."""
    source = preflight(address, origin=origin)
    try:
        ray.init(address=address, log_to_driver=False, logging_level=logging.ERROR)
    except Exception as exc:  # noqa: BLE001 - whatever Ray raises, the user gets one line
        raise UsageError(f"cannot connect to Ray at {address}: {init_failure(exc, source)}") from None


def preflight(address: str, *, origin: str = "--address") -> str:
    """Check ``address`` before ``ray.init``: its form, the token at hand, one bounded call.

    Returns where the token comes from ("" when none is sent); raises ``UsageError``.
    """
    target = parse(address, origin=origin)
    try:
        source = use_token()
    except UsageError as exc:
        raise UsageError(f"cannot connect to Ray at {address}: {exc}") from None
    if target is not None:
        probe(target, source)
    return source


def parse(address: str, *, origin: str = "--address") -> Target | None:
    """What ``address`` points at; None for ``auto`` with nothing to probe (Ray finds it)."""
    given = address
    if address == "auto":
        address, origin = os.environ.get("RAY_ADDRESS", "").strip(), "RAY_ADDRESS"
        if not address or address == "auto":
            return None
    if re.match(r"^https?://", address):
        raise UsageError(
            f"cannot connect to Ray at {address}: that is a cluster's jobs API (for `ray job submit`, "
            "see configs/cluster/job-submit.sh); a sweep joins a cluster with --address HOST:PORT "
            f"(the GCS, 6379 by default) or ray://HOST:{CLIENT_PORT}"
            + ("; it came from RAY_ADDRESS: unset it to sweep locally" if origin == "RAY_ADDRESS" else "")
        )
    found = _ADDRESS.match(address)
    if found is None or (not found["client"] and not found["port"]):
        raise UsageError(f"cannot connect to Ray at {address}: --address takes HOST:PORT (the GCS, 6379 by default), "
                         f"ray://HOST:PORT (Ray Client, {CLIENT_PORT}) or auto")
    client = bool(found["client"])
    port = found["port"] or str(CLIENT_PORT)
    return Target(address=given, endpoint=f"{found['host']}:{port}", client=client)


def token_source() -> str:
    """Where Ray would take the token from (a name, never the token), "" when nowhere.

    Ray's order: ``RAY_AUTH_TOKEN``, the file ``RAY_AUTH_TOKEN_PATH`` names (which must
    hold one), ``~/.ray/auth_token``.
    """
    if os.environ.get("RAY_AUTH_TOKEN", "").strip():
        return "RAY_AUTH_TOKEN"
    path = os.environ.get("RAY_AUTH_TOKEN_PATH", "").strip()
    if path:
        try:
            if Path(path).expanduser().read_text().strip():
                return f"RAY_AUTH_TOKEN_PATH ({path})"
        except OSError:
            pass
        raise UsageError(f"RAY_AUTH_TOKEN_PATH names {path}, which cannot be read or is empty: "
                         "point it at the file holding the cluster's token")
    default = Path.home() / DEFAULT_TOKEN_FILE
    try:
        return f"{default}" if default.read_text().strip() else ""
    except OSError:
        return ""


def use_token() -> str:
    """Turn on token mode when a token is at hand and ``RAY_AUTH_MODE`` is unset, as
    ``ray.init`` does for a cluster it finds itself; where the token comes from, "" if none sent."""
    source = token_source()
    mode = os.environ.get("RAY_AUTH_MODE")
    if mode is None and source:
        os.environ["RAY_AUTH_MODE"] = "token"  # the workers this driver starts see it too
        mode = "token"
    # Ray caches both the mode and the token: make them follow the environment now.
    Config.initialize("")
    AuthenticationTokenLoader.instance().reset_cache()
    if mode is not None and mode.lower() == "token":
        if not source:
            raise UsageError(f"RAY_AUTH_MODE=token is set but no token was found: {TOKEN_HINT}")
        return source
    return ""


def probe(target: Target, source: str) -> None:
    """One bounded call to the GCS or the Ray Client server; a ``UsageError`` saying why it failed."""
    channel = init_grpc_channel(target.endpoint)  # with Ray's own auth interceptor and TLS settings
    try:
        if target.client:
            request = ray_client_pb2.ClusterInfoRequest(type=ray_client_pb2.ClusterInfoType.PING)
            ray_client_pb2_grpc.RayletDriverStub(channel).ClusterInfo(request, timeout=PROBE_TIMEOUT_S)
        else:
            request = gcs_service_pb2.GetClusterIdRequest()
            gcs_service_pb2_grpc.NodeInfoGcsServiceStub(channel).GetClusterId(request, timeout=PROBE_TIMEOUT_S)
    except grpc.RpcError as exc:
        raise UsageError(f"cannot connect to Ray at {target.address}: {probe_failure(exc, target, source)}") from None
    finally:
        channel.close()


def probe_failure(exc: Any, target: Target, source: str) -> str:
    """The cause of a failed probe call, and what to do about it."""
    code, details = exc.code(), (exc.details() or "").strip().splitlines()
    detail = details[0][:200] if details else ""
    if code == grpc.StatusCode.UNAUTHENTICATED:
        if source:
            return f"authentication failed: the cluster refused the token from {source}; {TOKEN_HINT}"
        if os.environ.get("RAY_AUTH_MODE", "").lower() == "disabled":
            return f"authentication required (the cluster uses token authentication) and RAY_AUTH_MODE=disabled is set: unset it and {TOKEN_HINT}"
        return f"authentication required (the cluster uses token authentication) and no token was found: {TOKEN_HINT}"
    if code == grpc.StatusCode.UNAVAILABLE:
        if "refused" in detail.lower():
            what = "Ray Client server (`ray start --head --ray-client-server-port`)" if target.client else "Ray head (`ray start --head`)"
            return f"nothing is listening at {target.endpoint} (connection refused); start a {what} or check the address"
        return f"cannot reach {target.endpoint} ({detail}); check the address and the network"
    if code == grpc.StatusCode.DEADLINE_EXCEEDED:
        return f"no answer from {target.endpoint} within {PROBE_TIMEOUT_S:.0f}s; check the address, the network and that the cluster is up"
    if code == grpc.StatusCode.UNIMPLEMENTED:
        other = ("HOST:PORT for the GCS port (6379 by default)" if target.client
                 else f"ray://HOST:PORT for the Ray Client port ({CLIENT_PORT} by default)")
        return f"the port answers but not as a Ray {'Client server' if target.client else 'GCS'}; is it the other port? use {other}"
    return f"{code.name.lower()}: {detail}"


def init_failure(exc: BaseException, source: str) -> str:
    """The cause of a failed ``ray.init`` after a good probe (a version mismatch, most often).

    ``ray.init`` wraps what went wrong in ``ConnectionError("Failed to connect ...")``: the
    causes it chains are read too.
    """
    chain, seen = [], exc
    while seen is not None and len(chain) < 5:
        chain.append(seen)
        seen = seen.__cause__ or seen.__context__
    text = "\n".join(str(e) for e in reversed(chain))
    if "Version mismatch" in text or "version mismatch" in text:
        return version_mismatch(text)
    lowered = text.lower()
    if "unauthenticated" in lowered or "authentication" in lowered:
        if source:
            return f"authentication failed: the cluster refused the token from {source}; {TOKEN_HINT}"
        return f"authentication required (the cluster uses token authentication): {TOKEN_HINT}"
    innermost = chain[-1]
    lines = [line.strip() for line in str(innermost).strip().splitlines() if line.strip()]
    return f"{type(innermost).__name__}: {lines[0][:300] if lines else ''}"


def version_mismatch(text: str) -> str:
    """``version mismatch: the cluster runs Ray A (Python X), this sweep Ray B (Python Y)``."""
    rays = re.findall(r"Ray:\s*(\S+)", text)
    pythons = re.findall(r"Python:\s*(\S+)", text)
    if len(rays) >= 2 and len(pythons) >= 2:
        return (f"version mismatch: the cluster runs Ray {rays[0]} (Python {pythons[0]}), this sweep Ray {rays[1]} "
                f"(Python {pythons[1]}); run the sweep with the cluster's versions (pip install 'ray[default,client]=={rays[0]}')")
    flat = " ".join(text.split())
    return f"version mismatch: {flat[:300]}; run the sweep with the cluster's Ray and Python versions"
