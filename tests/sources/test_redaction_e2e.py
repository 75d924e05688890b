"""Secrets never reach an output: a sweep against a Hub that echoes credentials, then grep.

The loopback Hub echoes the request's Authorization header (and another secret) in every
error message; HF_ENDPOINT carries ``user:password@``. Every file the sweep, ``sweep one
--json``, ``sweep report`` and ``sweep publish`` write, and everything they print, is
searched for each secret.
"""

from __future__ import annotations

import base64
import json
from pathlib import Path

import pytest
from hub_fixtures import point_client_at
from hub_server import HubServer

from sweeper.cli import main

TOKEN = "hf_EchoedSecretToken123"
SERVICE_TOKEN = "svc-Echoed-Service-Secret-42"
PASSWORD = "EndpointPassw0rd"
# With user:password in the URL the client sends Basic auth: its base64 is a secret too.
BASIC = base64.b64encode(f"sweeper:{PASSWORD}".encode()).decode()
SECRETS = (TOKEN, SERVICE_TOKEN, PASSWORD, BASIC, "Bearer hf_")


def _cli(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str]:
    with pytest.raises(SystemExit) as exit_info:
        main(list(args))
    captured = capsys.readouterr()
    return int(exit_info.value.code or 0), captured.out + captured.err


def _leaks(folder: Path) -> list[str]:
    found = []
    for path in folder.rglob("*"):
        if path.is_file():
            data = path.read_bytes()
            found += [f"{path.name}: {s}" for s in SECRETS if s.encode() in data]
    return found


@pytest.fixture(params=["password-in-endpoint", "token-header"])
def echoing_hub(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch, tmp_path: Path):
    server = HubServer(page_size=50).start()
    server.echo_credentials = f"service token {SERVICE_TOKEN}"
    config = json.dumps({"model_type": "gpt2", "n_layer": 1, "n_embd": 16, "n_head": 2}).encode()
    server.add_repo("org/open", {"config.json": config}, downloads=900, library_name="transformers")
    server.add_repo("org/gated", {"config.json": config}, downloads=800, library_name="transformers", gated="manual")
    server.add_repo("org/broken", {"README.md": b"x"}, downloads=700, library_name="transformers")
    url = f"http://sweeper:{PASSWORD}@{server.host_port}" if request.param == "password-in-endpoint" else server.url
    point_client_at(url, monkeypatch, tmp_path / "hf_home")
    monkeypatch.setenv("HF_TOKEN", TOKEN)
    monkeypatch.setenv("MY_SERVICE_TOKEN", SERVICE_TOKEN)
    yield server
    server.stop()


def test_no_output_holds_a_secret(echoing_hub: HubServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out, site = tmp_path / "out", tmp_path / "site"
    code, printed = _cli(capsys, "--source", "hub", "--top", "3", "--executor", "inline", "--stages", "load,forward", "--out", str(out))
    assert code == 0, printed
    records = [json.loads(line) for line in (out / "records.jsonl").read_text().splitlines()]
    gated = next(r for r in records if r["model_id"] == "org/gated")
    # The echo really happened (the Hub's message is in the record), with the secrets masked.
    assert gated["reason"]["kind"] == "gated" and "request had Authorization" in gated["reason"]["message"], gated["reason"]
    # Credentials were sent: Basic from the endpoint's user:password, else the token.
    assert echoing_hub.auth_seen and (f"Bearer {TOKEN}" in echoing_hub.auth_seen or BASIC in echoing_hub.auth_seen[0])
    code_one, printed_one = _cli(capsys, "one", "org/gated", "--json", "--stages", "load")
    assert code_one == 1 and "request had Authorization" in printed_one
    code_pub, printed_pub = _cli(capsys, "publish", str(out), "--to", str(site))
    assert code_pub == 0, printed_pub
    assert (out / "records.parquet").is_file() and (site / "README.md").is_file()
    leaks = _leaks(out) + _leaks(site) + [f"output: {s}" for s in SECRETS if s in printed + printed_one + printed_pub]
    assert leaks == []


def test_redactor_masks_each_kind_of_secret(monkeypatch: pytest.MonkeyPatch) -> None:
    from sweeper.redact import redact

    monkeypatch.setenv("ACME_API_KEY", "k-1234567890")
    monkeypatch.setenv("DB_SECRET", "hunter2hunter2")
    text = (
        "GET https://alice:pw0rd-long@hub.example/api failed; Authorization: Bearer abc.def-123; "
        'headers {"authorization": "Basic dXNlcjpwYXNz"}; token hf_AbCdEf123456; key k-1234567890; hunter2hunter2'
    )
    masked = redact(text)
    for secret in ("alice:pw0rd-long", "abc.def-123", "dXNlcjpwYXNz", "hf_AbCdEf123456", "k-1234567890", "hunter2hunter2"):
        assert secret not in masked, masked
    assert "https://***@hub.example/api" in masked and "Authorization: ***" in masked
