"""The zoo source: every buildable transformers model type, ranked, with heads and ids."""

from __future__ import annotations

import itertools

from sweeper.config import SweepConfig
from sweeper.sources.base import get_source, select
from sweeper.sources.zoo import POPULAR, ZooSource, zoo_heads, zoo_types


def test_zoo_lists_every_buildable_type_once_with_a_head():
    listed = list(ZooSource(SweepConfig.of(source="zoo")).refs())
    assert [r.rank for r in listed] == list(range(1, len(listed) + 1))
    refs = [r for r in listed if r.library_name == "transformers"]  # the other libraries' entries sit among them
    assert len(refs) >= 600
    assert len({r.model_type for r in refs}) == len(refs)
    for ref in refs:
        assert ref.architecture and ref.pipeline_tag
        assert ref.library_name == "transformers" and ref.source == "zoo"
        assert ref.architecture in zoo_heads(ref.model_type)


def test_canonical_checkpoint_ids_come_from_the_installed_docs():
    by_type = {r.model_type: r for r in itertools.islice(ZooSource(None).refs(), 20)}
    assert by_type["bert"].model_id == "google-bert/bert-base-uncased"
    assert by_type["gpt2"].model_id == "openai-community/gpt2"
    # A type without a documented checkpoint gets a zoo/ id.
    refs = {r.model_type: r for r in ZooSource(None).refs()}
    assert refs["encoder-decoder"].model_id == "zoo/encoder-decoder"


def test_rank_order_is_popular_first_then_alphabetical():
    types = zoo_types()
    popular = [t for t in POPULAR if t in types]
    assert list(types[: len(popular)]) == popular
    rest = list(types[len(popular) :])
    assert rest == sorted(rest)


def test_heads_prefer_a_loss_that_runs_the_whole_model():
    refs = {r.model_type: r for r in itertools.islice(ZooSource(None).refs(), 20) if r.library_name == "transformers"}
    assert (refs["bert"].architecture, refs["bert"].pipeline_tag) == ("BertForMaskedLM", "fill-mask")
    assert refs["gpt2"].architecture == "GPT2LMHeadModel"
    assert refs["t5"].architecture == "T5ForConditionalGeneration"
    assert refs["whisper"].architecture == "WhisperForConditionalGeneration"
    assert refs["wav2vec2"].architecture == "Wav2Vec2ForCTC"
    assert refs["vit"].pipeline_tag == "image-classification"
    assert {"BertModel", "BertForSequenceClassification"} <= set(zoo_heads("bert"))


def test_registered_source_describes_itself_and_honours_top():
    source = get_source(SweepConfig.of(source="zoo"))
    info = source.describe()
    assert info["name"] == "zoo" and int(info["model_types"]) >= 600 and info["transformers"]
    top = list(select(source.refs(), SweepConfig.of(source="zoo", top=5)))
    assert [r.model_type for r in top[:3]] == list(zoo_types()[:3])
    assert [r.library_name for r in top[3:]] == ["timm", "timm"]  # timm's ImageNet CNNs rank beside RoBERTa
