"""How the driver joins or starts Ray: token authentication, one-line failures, local by default.

A stand-in GCS on loopback (Ray's own gRPC service definition) demands a token, as a
cluster started by Ray 2.59+ does, or echoes what it was sent. Each case runs in a fresh
process with its own HOME and Ray variables: the token mode Ray caches must not leak into
this process's local Ray session. The real clusters are in the slow tests
(``test_two_node_cluster.py``, ``test_job_submit.py``).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from concurrent import futures
from pathlib import Path

import grpc
import pytest
from ray.core.generated import gcs_service_pb2, gcs_service_pb2_grpc
from ray_cluster import REPO, connect_without_address, free_port, processes

from sweeper.redact import env_secrets, redact

RIGHT = "c0ffee" * 8  # the stand-in cluster's token
WRONG = "0badf00d" * 6
FILE_TOKEN = "f11e70ce" * 6
DEFAULT_TOKEN = "defa017e" * 6
CLI_LIMIT_S = 15.0  # a wrong token is an error within this, start-up included


class FakeGcs(gcs_service_pb2_grpc.NodeInfoGcsServiceServicer):
    """Answers GetClusterId when the request carries ``Bearer RIGHT``; else refuses (or echoes)."""

    echo = False

    def GetClusterId(self, request, context):  # noqa: N802 - Ray's method name
        sent = dict(context.invocation_metadata()).get("authorization", "")
        if self.echo:  # a server that repeats the credentials it saw in its error message
            context.abort(grpc.StatusCode.INTERNAL, f"saw credentials {sent.removeprefix('Bearer ')}")
        if sent != f"Bearer {RIGHT}":
            context.abort(grpc.StatusCode.UNAUTHENTICATED, "InvalidAuthToken: Authentication token is missing or incorrect")
        return gcs_service_pb2.GetClusterIdReply(cluster_id=b"x" * 28)


@pytest.fixture
def gcs() -> Iterator[tuple[str, FakeGcs]]:
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=2))
    servicer = FakeGcs()
    gcs_service_pb2_grpc.add_NodeInfoGcsServiceServicer_to_server(servicer, server)
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    yield f"127.0.0.1:{port}", servicer
    server.stop(grace=None)


def _env(home: Path, **ray: str) -> dict[str, str]:
    """This environment without any Ray or auth setting, HOME at ``home``, plus ``ray``."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("RAY_")}
    env.update(HOME=str(home), PYTHONPATH=str(REPO), RAY_USAGE_STATS_ENABLED="0", **ray)
    return env


PROBE = """
import sys
from sweeper.settings.errors import UsageError
from sweeper.executors.ray_connect import preflight
try:
    preflight(sys.argv[1])  # attach() then calls ray.init, which the stand-in cannot serve
    print("accepted")
except UsageError as exc:
    print(f"refused: {exc}")
"""


def _probe(address: str, env: dict[str, str]) -> str:
    done = subprocess.run([sys.executable, "-c", PROBE, address], env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout.strip()


def _home(tmp_path: Path, token: str | None = None) -> Path:
    home = tmp_path / "home"
    (home / ".ray").mkdir(parents=True, exist_ok=True)
    if token:
        (home / ".ray" / "auth_token").write_text(token + "\n")  # as `ray get-auth-token --generate` leaves it
    return home


def test_the_token_ray_start_left_in_the_home_folder_is_sent_with_nothing_set(gcs, tmp_path: Path) -> None:
    address, _ = gcs
    assert _probe(address, _env(_home(tmp_path, RIGHT))) == "accepted"


@pytest.mark.parametrize("source", ["RAY_AUTH_TOKEN", "RAY_AUTH_TOKEN_PATH"])
def test_token_from_the_environment_wins_over_the_home_folder(gcs, tmp_path: Path, source: str) -> None:
    address, _ = gcs
    home = _home(tmp_path, WRONG)
    if source == "RAY_AUTH_TOKEN":
        env = _env(home, RAY_AUTH_TOKEN=RIGHT)
    else:
        (tmp_path / "token").write_text(RIGHT)
        env = _env(home, RAY_AUTH_TOKEN_PATH=str(tmp_path / "token"))
    assert _probe(address, env) == "accepted"


@pytest.mark.parametrize(
    ("setting", "expected"),
    [
        ({}, "authentication required (the cluster uses token authentication) and no token was found"),
        ({"RAY_AUTH_TOKEN": WRONG}, "authentication failed: the cluster refused the token from RAY_AUTH_TOKEN"),
        ({"RAY_AUTH_TOKEN_PATH": "FILE"}, "authentication failed: the cluster refused the token from RAY_AUTH_TOKEN_PATH"),
        ({"RAY_AUTH_MODE": "disabled", "HOME_TOKEN": RIGHT}, "RAY_AUTH_MODE=disabled is set: unset it"),
        ({"RAY_AUTH_MODE": "token"}, "RAY_AUTH_MODE=token is set but no token was found"),
        ({"RAY_AUTH_TOKEN_PATH": "MISSING"}, "RAY_AUTH_TOKEN_PATH names"),
    ],
    ids=["no-token", "wrong-env-token", "wrong-token-file", "mode-disabled", "mode-token-no-token", "missing-token-file"],
)
def test_an_authentication_failure_says_why_and_what_to_set(gcs, tmp_path: Path, setting: dict[str, str], expected: str) -> None:
    address, _ = gcs
    setting = dict(setting)
    home = _home(tmp_path, setting.pop("HOME_TOKEN", None))
    if setting.get("RAY_AUTH_TOKEN_PATH") == "FILE":
        (tmp_path / "token").write_text(WRONG)
        setting["RAY_AUTH_TOKEN_PATH"] = str(tmp_path / "token")
    elif setting.get("RAY_AUTH_TOKEN_PATH") == "MISSING":
        setting["RAY_AUTH_TOKEN_PATH"] = str(tmp_path / "absent")
    said = _probe(address, _env(home, **setting))
    assert said.startswith(f"refused: cannot connect to Ray at {address}: ") and expected in said, said
    assert "RAY_AUTH_TOKEN" in said and WRONG not in said and RIGHT not in said  # what to set, never the token


def test_nothing_listening_and_the_wrong_kind_of_port_are_named(gcs, tmp_path: Path) -> None:
    address, _ = gcs
    env = _env(_home(tmp_path, RIGHT))
    closed = f"127.0.0.1:{free_port()}"
    assert f"nothing is listening at {closed} (connection refused)" in _probe(closed, env)
    said = _probe(f"ray://{address}", env)  # the GCS port given as Ray Client's
    assert "answers but not as a Ray Client server" in said and "HOST:PORT for the GCS port" in said, said
    said = _probe("http://127.0.0.1:8265", env)
    assert "that is a cluster's jobs API" in said and "configs/cluster/job-submit.sh" in said, said
    assert "--address takes HOST:PORT" in _probe("headnode", env)


def _sweep(address: str, env: dict[str, str], out: Path) -> tuple[int, str, float]:
    args = [sys.executable, "-m", "sweeper.cli", "--address", address, "--source", "zoo", "--top", "2",
            "--device", "cpu", "--stages", "load", "--no-report", "--out", str(out)]
    started = time.monotonic()
    done = subprocess.run(args, cwd=REPO, env=env, capture_output=True, text=True, timeout=120)
    return done.returncode, done.stdout + done.stderr, time.monotonic() - started


def test_wrong_token_is_one_line_exit_2_within_15s(gcs, tmp_path: Path) -> None:
    address, _ = gcs
    code, printed, seconds = _sweep(address, _env(_home(tmp_path), RAY_AUTH_TOKEN=WRONG), tmp_path / "out")
    errors = [line for line in printed.splitlines() if line.startswith("sweep: error:")]
    assert code == 2 and len(errors) == 1, printed
    assert "authentication failed" in errors[0] and address in errors[0], errors
    assert "Traceback" not in printed and "done:" not in printed, printed  # no "done: 0 models" before the error
    assert seconds < CLI_LIMIT_S, f"{seconds:.1f}s"
    assert WRONG not in printed


def test_no_ray_token_reaches_output_or_the_sweep_folder(gcs, tmp_path: Path) -> None:
    """A token in every place Ray reads one; a server that repeats what it saw."""
    address, servicer = gcs
    servicer.echo = True
    (tmp_path / "token").write_text(FILE_TOKEN + "\n")
    env = _env(_home(tmp_path, DEFAULT_TOKEN), RAY_AUTH_TOKEN=WRONG, RAY_AUTH_TOKEN_PATH=str(tmp_path / "token"))
    out = tmp_path / "out"
    code, printed, _ = _sweep(address, env, out)
    assert code == 2 and "saw credentials ***" in printed, printed  # the echo happened, masked
    leaks = [t for t in (WRONG, FILE_TOKEN, DEFAULT_TOKEN) if t in printed]
    for path in out.rglob("*"):
        if path.is_file():
            leaks += [f"{path.name}: {t}" for t in (WRONG, FILE_TOKEN, DEFAULT_TOKEN) if t.encode() in path.read_bytes()]
    assert (out / "sweep.json").is_file() and leaks == []


def test_redactor_knows_every_token_ray_reads(tmp_path: Path) -> None:
    (tmp_path / "token").write_text(FILE_TOKEN + "\n")
    env = {"RAY_AUTH_TOKEN": WRONG, "RAY_AUTH_TOKEN_PATH": str(tmp_path / "token"), "HOME": str(_home(tmp_path, DEFAULT_TOKEN))}
    secrets = env_secrets(env)
    assert {WRONG, FILE_TOKEN, DEFAULT_TOKEN} <= secrets
    assert redact(f"a {WRONG} b {FILE_TOKEN} c {DEFAULT_TOKEN}", secrets) == "a *** b *** c ***"


def test_without_address_a_stale_cluster_file_is_not_joined() -> None:
    """``ray start`` leaves $TMPDIR/ray/ray_current_cluster behind when its head dies; the
    default sweep must start its own Ray anyway (ray.init() alone would try to join it)."""
    temp = tempfile.mkdtemp(prefix="rs-", dir="/tmp")  # short: Ray's socket paths are limited
    try:
        (Path(temp) / "ray").mkdir()
        (Path(temp) / "ray" / "ray_current_cluster").write_text(f"127.0.0.1:{free_port()}")
        done = connect_without_address(_env(Path(temp), TMPDIR=temp))
        assert done.returncode == 0, done.stderr[-3000:]
        assert f"cpus {float(os.cpu_count() or 1)}" in done.stdout, done.stdout
        assert "ray: started a private local instance" in done.stderr and "joined only with --address" in done.stderr
    finally:
        for proc in processes(temp):  # ray.shutdown ended them; this is for a failed test
            proc.kill()
        shutil.rmtree(temp, ignore_errors=True)


def test_a_version_mismatch_names_both_versions() -> None:
    from sweeper.executors.ray_connect import init_failure

    mismatch = RuntimeError(  # the text of ray._private.utils.check_version_info
        "Version mismatch: The cluster was started with:\n    Ray: 2.59.0\n    Python: 3.12.4\n"
        "This process on node 10.0.0.2 was started with:\n    Ray: 2.60.0\n    Python: 3.11.9\n")
    wrapped = ConnectionError("Failed to connect to Ray cluster at 10.0.0.1:6379")  # as ray.init re-raises it
    wrapped.__cause__ = mismatch
    said = init_failure(wrapped, "")
    assert said.startswith("version mismatch: the cluster runs Ray 2.59.0 (Python 3.12.4), this sweep Ray 2.60.0 (Python 3.11.9)")
    assert "ray[default,client]==2.59.0" in said and "\n" not in said
