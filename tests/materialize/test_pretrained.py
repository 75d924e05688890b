"""Pretrained weights and Hub configs from the loopback Hub: the real client, real files."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace

import pytest
import torch
from hub_fixtures import add_huge_repo, closed_port, save_tiny_bert, serve_hub
from hub_server import HubServer
from huggingface_hub.errors import (
    EntryNotFoundError,
    GatedRepoError,
    LocalEntryNotFoundError,
    RepositoryNotFoundError,
    RevisionNotFoundError,
)
from transformers import AutoModelForMaskedLM, BertForMaskedLM

from sweeper.checks.classify import classify
from sweeper.libraries.transformers import sizes
from sweeper.libraries.transformers.pretrained import (
    HubUnreachableError,
    UnsafeWeightsError,
    _hub_errors,
    fetch_config,
    load_pretrained,
)
from sweeper.libraries.transformers.sizes import WeightsTooLargeError
from sweeper.records import ENVIRONMENT_KINDS, ModelRef, ReasonKind
from sweeper.settings.config import SweepConfig
from sweeper.settings.errors import ConfigError, RemoteCodeError

CFG = SweepConfig.of(weights="pretrained")
TOKEN = "hf_grantedLoopbackToken42"


@pytest.fixture
def hub_server(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[HubServer]:
    with serve_hub(monkeypatch, tmp_path) as server:
        yield server


@pytest.fixture(scope="module")
def bert_folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return save_tiny_bert(tmp_path_factory.mktemp("tiny-bert"))


def ref(model_id: str, revision: str | None = None) -> ModelRef:
    return ModelRef(model_id, rank=1, revision=revision)


def fetched(server: HubServer, suffix: str) -> list[str]:
    return [path for method, path, _ in server.log if method == "GET" and path.endswith(suffix)]


def test_loads_served_weights_at_the_pinned_commit(hub_server: HubServer, bert_folder: Path) -> None:
    repo = hub_server.add_folder("org/tiny-bert", bert_folder)
    model = load_pretrained(ref("org/tiny-bert"), CFG, BertForMaskedLM)
    local = BertForMaskedLM.from_pretrained(bert_folder)
    ids = torch.tensor([[1, 5, 7, 2]])
    torch.testing.assert_close(model(input_ids=ids).logits, local(input_ids=ids).logits)
    # Weights came through the large-file path at the commit model_info named.
    assert any(f"/resolve/{repo.sha}/model.safetensors" in p for m, p, _ in hub_server.log if m == "HEAD")
    assert fetched(hub_server, "/_lfs/" + hashlib.sha256(repo.files["model.safetensors"]).hexdigest())


def test_auto_head_class_and_explicit_revision(hub_server: HubServer, bert_folder: Path) -> None:
    repo = hub_server.add_folder("tiny-bert", bert_folder)  # an old-style id without org
    model = load_pretrained(ref("tiny-bert", repo.sha), CFG, AutoModelForMaskedLM)
    assert type(model).__name__ == "BertForMaskedLM"
    info = f"/api/models/tiny-bert/revision/{repo.sha}?blobs=true"  # file sizes, for the size limits
    assert info in [p for _, p, _ in hub_server.log]


def test_fetch_config(hub_server: HubServer, bert_folder: Path) -> None:
    hub_server.add_folder("org/tiny-bert", bert_folder)
    hub_server.add_repo("org/diffusers-thing", {"model_index.json": b"{}"})
    config = fetch_config(ref("org/tiny-bert"), CFG)
    assert config is not None and config["model_type"] == "bert" and config["hidden_size"] == 16
    assert fetch_config(ref("org/diffusers-thing"), CFG) is None
    hub_server.add_repo("org/broken", {"config.json": b"{not json"})
    with pytest.raises(ConfigError, match="not valid JSON"):
        fetch_config(ref("org/broken"), CFG)
    assert not fetched(hub_server, ".safetensors")  # a config never pulls weights


def test_gated_repo(hub_server: HubServer, bert_folder: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    hub_server.add_folder("org/gated", bert_folder, gated="manual", granted={TOKEN})
    with pytest.raises(GatedRepoError):
        load_pretrained(ref("org/gated"), CFG, BertForMaskedLM)
    with pytest.raises(GatedRepoError):
        fetch_config(ref("org/gated"), CFG)
    monkeypatch.setenv("HF_TOKEN", "hf_someoneElsesToken")
    with pytest.raises(GatedRepoError):  # a token without access: 403, still gated
        fetch_config(ref("org/gated"), CFG)
    monkeypatch.setenv("HF_TOKEN", TOKEN)
    assert isinstance(load_pretrained(ref("org/gated"), CFG, BertForMaskedLM), BertForMaskedLM)


def test_missing_repo_and_revision(hub_server: HubServer, bert_folder: Path) -> None:
    hub_server.add_folder("org/tiny-bert", bert_folder)
    with pytest.raises(RepositoryNotFoundError) as info:
        load_pretrained(ref("org/does-not-exist"), CFG, BertForMaskedLM)
    assert not isinstance(info.value, GatedRepoError)
    with pytest.raises(RepositoryNotFoundError):
        fetch_config(ref("org/does-not-exist"), CFG)
    with pytest.raises(RevisionNotFoundError):
        load_pretrained(ref("org/tiny-bert", "0" * 40), CFG, BertForMaskedLM)


def test_remote_code_refused_before_any_weights(hub_server: HubServer, bert_folder: Path) -> None:
    config = json.loads((bert_folder / "config.json").read_text())
    config["auto_map"] = {"AutoModel": "modeling_custom.CustomModel"}
    files = {"config.json": json.dumps(config).encode(), "modeling_custom.py": b"raise SystemExit('ran remote code')"}
    files["model.safetensors"] = (bert_folder / "model.safetensors").read_bytes()
    hub_server.add_repo("org/custom", files)
    with pytest.raises(RemoteCodeError, match="needs trust_remote_code") as info:
        load_pretrained(ref("org/custom"), CFG, AutoModelForMaskedLM)
    assert info.value.reason_kind is ReasonKind.REMOTE_CODE
    with pytest.raises(RemoteCodeError):
        fetch_config(ref("org/custom"), CFG)
    assert fetch_config(ref("org/custom"), CFG.replace(trust_remote_code=True))["auto_map"]  # type: ignore[index]
    assert not fetched(hub_server, ".safetensors") and not fetched(hub_server, ".py")


def test_pickled_weights_are_never_loaded(hub_server: HubServer, bert_folder: Path) -> None:
    hub_server.add_repo("org/pickled", {"config.json": (bert_folder / "config.json").read_bytes(),
                                        "pytorch_model.bin": b"not even read"})
    with pytest.raises(UnsafeWeightsError) as info:
        load_pretrained(ref("org/pickled"), CFG, BertForMaskedLM)
    assert info.value.reason_kind is ReasonKind.DOWNLOAD
    assert not fetched(hub_server, ".bin")


def test_unreachable_hub(hub_server: HubServer, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("huggingface_hub.constants.ENDPOINT", f"http://127.0.0.1:{closed_port()}")
    monkeypatch.setenv("HF_ENDPOINT", f"http://127.0.0.1:{closed_port()}")
    with pytest.raises(HubUnreachableError) as info:
        load_pretrained(ref("org/anything"), CFG, BertForMaskedLM)
    assert info.value.reason_kind is ReasonKind.DOWNLOAD and "\n" not in str(info.value)


def test_offline_uses_the_cache_and_reports_what_is_missing(
    hub_server: HubServer, bert_folder: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo = hub_server.add_folder("org/tiny-bert", bert_folder)
    load_pretrained(ref("org/tiny-bert", repo.sha), CFG, BertForMaskedLM)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setattr("huggingface_hub.constants.HF_HUB_OFFLINE", True)
    hub_server.log.clear()
    assert isinstance(load_pretrained(ref("org/tiny-bert", repo.sha), CFG, BertForMaskedLM), BertForMaskedLM)
    assert hub_server.log == []
    # Offline and not cached: the Hub never said no, so it is "unreachable" (a download
    # reason), which lets tiny/random sweeps fall back to the type's default config.
    with pytest.raises(HubUnreachableError, match="org/never-downloaded"):
        fetch_config(ref("org/never-downloaded"), CFG)


def test_wrapped_hub_errors_come_out_unwrapped() -> None:
    original = EntryNotFoundError("config.json is not in the repo")
    with pytest.raises(EntryNotFoundError) as info, _hub_errors(ref("org/x")):
        raise OSError("transformers says: could not load") from original
    assert info.value is original
    missing = LocalEntryNotFoundError("config.json is not in the cache")
    with pytest.raises(HubUnreachableError) as unreachable, _hub_errors(ref("org/x")):
        raise OSError("transformers says: could not load") from missing
    assert unreachable.value.__cause__ is missing
    with pytest.raises(ValueError), _hub_errors(ref("org/x")):  # unrelated errors pass through
        raise ValueError("bad config value")


def test_a_140_gb_repo_is_refused_before_any_download(hub_server: HubServer, bert_folder: Path) -> None:
    add_huge_repo(hub_server, bert_folder)
    with pytest.raises(WeightsTooLargeError, match=r"140\.0 GB of weights > download limit 100\.0 GB") as info:
        load_pretrained(ref("org/huge"), CFG.replace(max_download_gb=100), BertForMaskedLM)
    assert classify(info.value).kind is ReasonKind.TOO_LARGE and ReasonKind.TOO_LARGE in ENVIRONMENT_KINDS
    assert not fetched(hub_server, ".safetensors") and not fetched(hub_server, ".json.index")
    assert not [p for _, p, _ in hub_server.log if "/_lfs/" in p]


def test_parameter_limit_from_the_hub_summary_or_the_headers(hub_server: HubServer, bert_folder: Path) -> None:
    hub_server.add_folder("org/tiny-bert", bert_folder)
    small = CFG.replace(max_params=1000, max_download_gb=1)
    with pytest.raises(WeightsTooLargeError, match=r"parameters > limit 1,000"):
        load_pretrained(ref("org/tiny-bert"), small, BertForMaskedLM)
    assert not [s for m, p, s in hub_server.log if m == "GET" and "/_lfs/" in p]  # the summary sufficed
    hub_server.add_folder("org/no-summary", bert_folder, safetensors={})  # the Hub has no summary
    with pytest.raises(WeightsTooLargeError, match=r"parameters > limit 1,000"):
        load_pretrained(ref("org/no-summary"), small, BertForMaskedLM)
    assert [s for m, p, s in hub_server.log if m == "GET" and "/_lfs/" in p] == [206]  # a range read of the header
    model = load_pretrained(ref("org/tiny-bert"), small.replace(max_params=10**6), BertForMaskedLM)
    assert isinstance(model, BertForMaskedLM)


def test_default_limits_fit_the_node(monkeypatch: pytest.MonkeyPatch) -> None:
    import psutil

    monkeypatch.setattr(sizes.shutil, "disk_usage", lambda path: SimpleNamespace(free=50e9))
    monkeypatch.setattr(psutil, "virtual_memory", lambda: SimpleNamespace(available=16e9))
    assert sizes.limit_bytes(SweepConfig()) == pytest.approx(0.9 * 50e9)
    assert sizes.limit_bytes(SweepConfig.of(max_download_gb=2.5)) == 2.5e9
    # float32 weights plus gradients for backward, with headroom: 16 GB holds 1.6e9 parameters
    assert sizes.limit_params(SweepConfig()) == int(16e9 / (4 * 2 * 1.25))
    assert sizes.limit_params(SweepConfig.of(dtype="bfloat16", stages=("load", "forward"))) == int(16e9 / (2 * 1.25))
    assert sizes.limit_params(SweepConfig.of(max_params=7)) == 7
