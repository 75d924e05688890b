"""The loopback Hub's write routes: push_to_hub round trips through the real clients."""

from __future__ import annotations

import pytest
from hub_server import HubServer

TOKEN = "hf_uploaderToken777"


def test_dataset_push_to_hub_and_load_back(hub_server: HubServer, monkeypatch: pytest.MonkeyPatch) -> None:
    datasets = pytest.importorskip("datasets")
    monkeypatch.setenv("HF_TOKEN", TOKEN)
    first = datasets.Dataset.from_dict({"model_id": ["a", "b"], "status": ["pass", "fail"]})
    first.push_to_hub("org/results")
    repo = hub_server.repos[("dataset", "org/results")]
    assert "README.md" in repo.files and any(p.endswith(".parquet") for p in repo.files)
    assert any(method == "PUT" for method, _, _ in hub_server.log)  # the shard took the LFS path
    assert f"Bearer {TOKEN}" in hub_server.auth_seen

    # A second push replaces the shard and keeps one README.
    second = datasets.Dataset.from_dict({"model_id": ["c"], "status": ["pass"]})
    second.push_to_hub("org/results")
    loaded = datasets.load_dataset("org/results", split="train")
    assert loaded.to_dict() == {"model_id": ["c"], "status": ["pass"]}
    assert sum(p.endswith(".parquet") for p in repo.files) == 1


def test_upload_file_regular_and_create_repo_conflict(hub_server: HubServer) -> None:
    from huggingface_hub import HfApi
    from huggingface_hub.errors import HfHubHTTPError

    api = HfApi(endpoint=hub_server.url, token=TOKEN)
    api.create_repo("org/model-x")
    api.create_repo("org/model-x", exist_ok=True)  # the 409 is accepted when asked
    with pytest.raises(HfHubHTTPError):
        api.create_repo("org/model-x")
    before = hub_server.repos[("model", "org/model-x")].sha
    info = api.upload_file(path_or_fileobj=b"# notes\n", path_in_repo="NOTES.md", repo_id="org/model-x")
    repo = hub_server.repos[("model", "org/model-x")]
    assert repo.files["NOTES.md"] == b"# notes\n" and repo.sha != before and repo.sha in str(info)
    assert api.model_info("org/model-x").sha == repo.sha
