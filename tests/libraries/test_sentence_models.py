"""sentence-transformers models as the library runs them: the encoder stack, pooled."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest
from hub_fixtures import serve_hub

from sweeper.libraries.sentence_transformers.layout import from_name, pooling_modes
from sweeper.records import ModelRef
from sweeper.settings.config import SweepConfig

pytestmark = pytest.mark.skipif(importlib.util.find_spec("sentence_transformers") is None,
                                reason="the libraries extra is not installed")


def _st_ref(model_id: str, model_type: str, **fields) -> ModelRef:
    return ModelRef(model_id, 1, library_name="sentence-transformers", model_type=model_type, source="catalog", **fields)


def _embeds(built) -> None:
    """The built sentence model runs on its own inputs and gives one embedding per row."""
    out = built.model(**built.inputs)
    emb = out["sentence_embedding"]
    assert emb.shape[0] == built.inputs["input_ids"].shape[0]
    out.loss.backward()


def test_a_t5_sentence_model_runs_the_encoder_alone(monkeypatch):
    from sweeper.libraries import build

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    built = build(_st_ref("sentence-transformers/sentence-t5-base", "t5"), SweepConfig.of(device="cpu"))
    assert built.architecture == "SentenceTransformer(T5EncoderModel)"
    assert not any("decoder" in name for name, _ in built.model.named_parameters())
    _embeds(built)


def test_an_encoder_decoder_built_whole_runs_its_encoder_stack(monkeypatch):
    from sweeper.libraries import build

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    built = build(_st_ref("org/bart-sentences", "bart", architecture="BartModel"), SweepConfig.of(device="cpu"))
    assert built.architecture == "SentenceTransformer(BartModel.encoder)"
    assert not any("decoder" in name for name, _ in built.model.named_parameters())
    _embeds(built)


def _tokens_and_embedding(built):
    """The encoder's token states and the sentence embedding, for the same inputs."""
    import torch

    with torch.no_grad():
        tokens = built.model.encoder(**built.inputs)[0]
        emb = built.model(**built.inputs)["sentence_embedding"]
    return tokens, emb


def test_offline_a_known_family_pools_as_its_card_says(monkeypatch):
    import torch

    from sweeper.libraries import build

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    built = build(_st_ref("BAAI/bge-small-en-v1.5", "bert"), SweepConfig.of(device="cpu"))
    assert built.notes["modules"] == "encoder+Pooling(cls)+Normalize"
    assert built.notes["pooling_source"] == "name table"
    tokens, emb = _tokens_and_embedding(built)
    torch.testing.assert_close(emb, torch.nn.functional.normalize(tokens[:, 0], dim=-1))


def test_offline_an_unknown_model_pools_by_the_default(monkeypatch):
    from sweeper.libraries import build

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    built = build(_st_ref("org/some-sentence-model", "bert"), SweepConfig.of(device="cpu"))
    assert built.notes["modules"] == "encoder+Pooling(mean)+Normalize"
    assert built.notes["pooling_source"] == "default"


def test_the_name_table_keeps_rerankers_and_llm_embedders_out():
    assert from_name("BAAI/bge-reranker-base") is None
    assert from_name("intfloat/e5-mistral-7b-instruct") is None
    assert from_name("sentence-transformers/multi-qa-mpnet-base-dot-v1").pooling == ("cls",)
    assert from_name("sentence-transformers/paraphrase-MiniLM-L6-v2").normalize is False


def test_pooling_modes_read_both_config_spellings():
    assert pooling_modes({"pooling_mode": "lasttoken"}) == ("lasttoken",)
    assert pooling_modes({"pooling_mode_cls_token": True, "pooling_mode_mean_tokens": False}) == ("cls",)
    assert pooling_modes({"pooling_mode": ["mean", "max"]}) == ("mean", "max")
    with pytest.raises(ValueError, match="unknown pooling"):
        pooling_modes({"pooling_mode": "median"})


def _bert_repo_files(tmp: Path) -> dict[str, bytes]:
    from hub_fixtures import save_tiny_bert

    folder = save_tiny_bert(tmp / "bert")
    return {"config.json": (folder / "config.json").read_bytes()}


def test_online_the_repos_own_modules_json_decides(monkeypatch, tmp_path):
    import torch

    from sweeper.libraries import build

    modules = [
        {"idx": 0, "name": "0", "path": "", "type": "sentence_transformers.models.Transformer"},
        {"idx": 1, "name": "1", "path": "1_Pooling", "type": "sentence_transformers.models.Pooling"},
        {"idx": 2, "name": "2", "path": "2_LayerNorm", "type": "sentence_transformers.models.LayerNorm"},
    ]
    # A legacy pooling config: max pooling, and no Normalize module (unlike the default).
    pooling = {"word_embedding_dimension": 16, "pooling_mode_cls_token": False, "pooling_mode_mean_tokens": False,
               "pooling_mode_max_tokens": True}
    files = {**_bert_repo_files(tmp_path), "modules.json": json.dumps(modules).encode(),
             "1_Pooling/config.json": json.dumps(pooling).encode()}
    with serve_hub(monkeypatch, tmp_path) as server:
        server.add_repo("BAAI/bge-small-en-v1.5", files)  # a name-table family: the repo wins
        server.add_repo("org/no-modules", _bert_repo_files(tmp_path / "other"))
        server.add_repo("org/broken-modules", {**_bert_repo_files(tmp_path / "third"), "modules.json": b"[{not json"})
        built = build(_st_ref("BAAI/bge-small-en-v1.5", "bert"), SweepConfig.of(device="cpu"))
        bare = build(_st_ref("org/no-modules", "bert"), SweepConfig.of(device="cpu"))
        broken = build(_st_ref("org/broken-modules", "bert"), SweepConfig.of(device="cpu"))
    assert built.notes["config_source"] == "hub"
    assert built.notes["modules"] == "encoder+Pooling(max)"
    assert built.notes["pooling_source"] == "repo"
    assert built.notes["modules_unbuilt"] == "LayerNorm"
    tokens, emb = _tokens_and_embedding(built)
    torch.testing.assert_close(emb, tokens.max(dim=1).values)
    assert bare.notes["pooling_source"] == "default (no modules.json in the repo)"
    assert broken.notes["pooling_source"].startswith("default (JSONDecodeError: ")


def test_online_dense_modules_run_between_pooling_and_normalize(monkeypatch, tmp_path):
    import torch

    from sweeper.libraries import build

    # sentence-t5's layout: mean pooling, a Dense projection without bias, Normalize.
    modules = [
        {"idx": 0, "name": "0", "path": "", "type": "sentence_transformers.models.Transformer"},
        {"idx": 1, "name": "1", "path": "1_Pooling", "type": "sentence_transformers.models.Pooling"},
        {"idx": 2, "name": "2", "path": "2_Dense", "type": "sentence_transformers.models.Dense"},
        {"idx": 3, "name": "3", "path": "3_Normalize", "type": "sentence_transformers.models.Normalize"},
    ]
    dense = {"in_features": 768, "out_features": 12, "bias": False,
             "activation_function": "torch.nn.modules.linear.Identity"}
    files = {**_bert_repo_files(tmp_path), "modules.json": json.dumps(modules).encode(),
             "1_Pooling/config.json": json.dumps({"pooling_mode": "mean"}).encode(),
             "2_Dense/config.json": json.dumps(dense).encode()}
    with serve_hub(monkeypatch, tmp_path) as server:
        server.add_repo("org/t5-like", files)
        built = build(_st_ref("org/t5-like", "bert"), SweepConfig.of(device="cpu"))
    assert built.notes["modules"] == "encoder+Pooling(mean)+Dense(12,Identity)+Normalize"
    assert "modules_unbuilt" not in built.notes
    _, emb = _tokens_and_embedding(built)
    assert emb.shape == (built.inputs["input_ids"].shape[0], 12)
    torch.testing.assert_close(emb.norm(dim=-1), torch.ones(emb.shape[0]))


def test_a_dense_activation_outside_torch_nn_is_not_imported():
    from sweeper.libraries.sentence_transformers.layout import dense_spec

    assert dense_spec({"out_features": 8, "activation_function": "torch.nn.modules.activation.Tanh"}).activation == "Tanh"
    assert dense_spec({"out_features": 8, "activation_function": "custom_code.Evil"}) is None
