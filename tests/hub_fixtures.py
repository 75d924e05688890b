"""Pytest fixture and helpers for tests against the loopback Hub (``hub_server.py``).

Use as a plugin (``pytest_plugins = ["hub_fixtures"]`` in a conftest) or import the
fixture into a conftest or test module: ``from hub_fixtures import hub_server``.
"""

from __future__ import annotations

import contextlib
import json
import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hub_server import HubServer


def point_client_at(url: str, monkeypatch: Any, hf_home: Path) -> None:
    """Point huggingface_hub (and datasets, if loaded) at ``url`` with a fresh cache.

    The client reads HF_ENDPOINT, HF_HOME and HF_HUB_OFFLINE into module constants when it
    is imported, so setting the environment alone is not enough once it is loaded: the
    constants, and the module-level ``HfApi`` behind ``huggingface_hub.list_models``, are
    patched too. Everything is undone by ``monkeypatch`` after the test.
    """
    import sys

    from huggingface_hub import constants, hf_api

    hub_cache = hf_home / "hub"
    monkeypatch.setenv("HF_ENDPOINT", url)
    monkeypatch.setenv("HF_HOME", str(hf_home))
    monkeypatch.setenv("HF_HUB_DISABLE_TELEMETRY", "1")
    monkeypatch.setenv("HF_HUB_DISABLE_XET", "1")
    # The node-wide Hub request bucket (sweeper.hub.rate) lives with the test's cache.
    monkeypatch.setenv("SWEEPER_RATE_DIR", str(hf_home / "rate"))
    for name in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE", "HF_DATASETS_OFFLINE", "HF_HUB_CACHE", "HF_TOKEN"):
        monkeypatch.delenv(name, raising=False)
    patches = {
        "ENDPOINT": url,
        "HUGGINGFACE_CO_URL_TEMPLATE": url + "/{repo_id}/resolve/{revision}/{filename}",
        "HF_HUB_OFFLINE": False,
        "HF_HOME": str(hf_home),
        "HF_HUB_CACHE": str(hub_cache),
        "HF_ASSETS_CACHE": str(hf_home / "assets"),
        "HF_TOKEN_PATH": str(hf_home / "token"),
        "HF_STORED_TOKENS_PATH": str(hf_home / "stored_tokens"),
        "HF_HUB_DISABLE_TELEMETRY": True,
        # Uploads take the LFS path this server implements, not Xet storage.
        "HF_HUB_DISABLE_XET": True,
    }
    for name, value in patches.items():
        monkeypatch.setattr(constants, name, value, raising=False)
    monkeypatch.setattr(hf_api.api, "endpoint", url)
    datasets_config = sys.modules.get("datasets.config")
    if datasets_config is not None:  # imported already: its import-time copies are stale
        monkeypatch.setattr(datasets_config, "HF_ENDPOINT", url)
        monkeypatch.setattr(datasets_config, "HUB_DATASETS_URL", url + "/datasets/{repo_id}/resolve/{revision}/{path}")
        monkeypatch.setattr(datasets_config, "HF_HUB_OFFLINE", False)
        monkeypatch.setattr(datasets_config, "HF_DATASETS_OFFLINE", False, raising=False)


def save_tiny_bert(folder: Path, **config_overrides: Any) -> Path:
    """Save a tiny random BertForMaskedLM (safetensors) into ``folder``; returns it."""
    import torch
    from transformers import BertConfig, BertForMaskedLM

    torch.manual_seed(0)
    config = BertConfig(
        vocab_size=64, hidden_size=16, num_hidden_layers=1, num_attention_heads=2,
        intermediate_size=32, max_position_embeddings=32, **config_overrides,
    )
    BertForMaskedLM(config).save_pretrained(folder)
    return folder


def add_huge_repo(server: HubServer, bert_folder: Path, repo_id: str = "org/huge", **meta: Any) -> None:
    """A sharded repo whose index and file sizes declare 140 GB (served as placeholders)."""
    shards = ["model-00001-of-00002.safetensors", "model-00002-of-00002.safetensors"]
    index = {"metadata": {"total_size": 140_000_000_000}, "weight_map": {"a.weight": shards[0], "b.weight": shards[1]}}
    files = {"config.json": (bert_folder / "config.json").read_bytes(),
             "model.safetensors.index.json": json.dumps(index).encode(), **{s: b"placeholder" for s in shards}}
    server.add_repo(repo_id, files, declared_sizes=dict.fromkeys(shards, 70_000_000_000),
                    safetensors={"parameters": {"BF16": 70_000_000_000}, "total": 70_000_000_000}, **meta)


@contextlib.contextmanager
def serve_hub(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, *, page_size: int = 3) -> Iterator[HubServer]:
    """Start a ``HubServer`` and point the client at it until the block ends."""
    server = HubServer(page_size=page_size).start()
    point_client_at(server.url, monkeypatch, tmp_path / "hf_home")
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def hub_server(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[HubServer]:
    """A started ``HubServer`` with the Hub client pointed at it (online, fresh HF_HOME)."""
    with serve_hub(monkeypatch, tmp_path) as server:
        yield server


def populate(server: HubServer, count: int = 7) -> None:
    """``count`` models with distinct downloads; some say their type by config, some by tag."""
    for i in range(count):
        files = {"config.json": json.dumps({"model_type": "gpt2"}).encode()} if i % 2 == 0 else {"README.md": b"x"}
        server.add_repo(
            f"org/model-{i}", files, downloads=1000 - i * 10, pipeline_tag="text-generation" if i % 2 else None,
            library_name="transformers", tags=["transformers", "pytorch", "bert", "region:us"],
        )


def closed_port() -> int:
    """A loopback port nothing listens on (bound, then released)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]
