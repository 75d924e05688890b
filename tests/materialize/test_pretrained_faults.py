"""A pretrained sweep against a misbehaving loopback Hub: one record per model, per case."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from hub_faults import RESET, Fault
from hub_fixtures import add_huge_repo, save_tiny_bert, serve_hub
from hub_server import HubServer

from sweeper.records import ReasonKind, Status
from sweeper.runner import run_sweep
from sweeper.settings.config import SweepConfig
from sweeper.storage.store import read_records


@pytest.fixture
def hub_server(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[HubServer]:
    monkeypatch.setenv("SWEEPER_CACHE", str(tmp_path / "sweeper-cache"))
    with serve_hub(monkeypatch, tmp_path) as server:
        yield server


@pytest.fixture(scope="module")
def bert_folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return save_tiny_bert(tmp_path_factory.mktemp("tiny-bert"))


def test_each_fault_gives_one_record(hub_server: HubServer, bert_folder: Path, tmp_path: Path) -> None:
    cases = ["ok", "limited", "flaky", "reset", "down", "huge"]
    for rank, name in enumerate(cases):
        meta = {"downloads": 1000 - rank, "library_name": "transformers", "pipeline_tag": "fill-mask"}
        if name == "huge":
            add_huge_repo(hub_server, bert_folder, "org/huge", **meta)
        else:
            hub_server.add_folder(f"org/{name}", bert_folder, **meta)
    hub_server.faults.add(Fault(429, path="org/limited", count=2, retry_after="0.2"))
    hub_server.faults.add(Fault(503, path="org/flaky/resolve", count=3))
    hub_server.faults.add(Fault(RESET, path="org/reset/resolve/.*/config.json", count=1))
    hub_server.faults.add(Fault(503, path="org/down"))
    cfg = SweepConfig.of(source="hub", top=6, weights="pretrained", stages=("load",), executor="inline",
                      out=str(tmp_path / "run"), hub_tries=4, max_download_gb=100, hub_backoff_s=0.02)
    result = run_sweep(cfg, quiet=True, write_report=False)
    records = {r.model_id: r for r in read_records(tmp_path / "run")}
    assert result.total == 6 and sorted(records) == sorted(f"org/{name}" for name in cases)
    for name in ("ok", "limited", "flaky", "reset"):
        assert records[f"org/{name}"].status is Status.PASS, records[f"org/{name}"].reason
    down = records["org/down"].reason
    assert down is not None and down.kind is ReasonKind.DOWNLOAD
    assert "gave up after 4 tries, last HTTP 503" in down.message
    huge = records["org/huge"].reason
    assert huge is not None and huge.kind is ReasonKind.TOO_LARGE and "140.0 GB" in huge.message
    down_calls = [path for _, path, _ in hub_server.log if "org/down" in path]
    assert len(down_calls) == 4  # bounded: the client's own retries did not multiply the tries
