"""The zoo source: every buildable transformers model type, ranked, with heads and ids."""

from __future__ import annotations

import itertools

from sweeper.libraries.quantization import from_id
from sweeper.settings.config import SweepConfig
from sweeper.sources.base import get_source, select
from sweeper.sources.zoo import POPULAR, ZooSource, is_own_checkpoint, zoo_heads, zoo_types


def test_zoo_lists_every_buildable_type_once_with_a_head():
    listed = list(ZooSource(SweepConfig.of(source="zoo")).refs())
    assert [r.rank for r in listed] == list(range(1, len(listed) + 1))
    # The other libraries' entries and the quantized checkpoints sit among the model types.
    quantized = [r for r in listed if from_id(r.model_id) is not None]
    assert [(r.model_id, r.model_type, from_id(r.model_id)["method"]) for r in quantized] == \
        [("unsloth/Llama-3.2-3B-Instruct-unsloth-bnb-4bit", "llama", "bitsandbytes")]
    refs = [r for r in listed if r.library_name == "transformers" and r not in quantized]
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
    # A type without a documented checkpoint is named after its default config.
    refs = {r.model_type: r for r in ZooSource(None).refs()}
    assert refs["encoder-decoder"].model_id == "encoder-decoder (default config)"


def test_a_checkpoint_of_another_model_type_is_never_a_zoo_entrys_name():
    """``make sweep`` printed ``ByteDance-Seed/Seed-OSS-36B-Instruct (SegformerForImageClassification)``:
    the config docstring named another model's checkpoint. Such an entry gets a neutral id."""
    refs = {r.model_type: r for r in itertools.islice(ZooSource(None).refs(), 100)}
    assert refs["segformer"].model_id == "segformer (default config)"
    assert refs["qwen2_5_vl"].model_id == "qwen2_5_vl (default config)"  # Qwen2-VL is another type
    assert refs["xlm-roberta"].model_id == "xlm-roberta (default config)"  # xlm-mlm is XLM's
    assert refs["qwen2_vl"].model_id == "Qwen/Qwen2-VL-7B-Instruct"
    assert refs["xlm"].model_id == "FacebookAI/xlm-mlm-en-2048"
    assert is_own_checkpoint("Qwen/Qwen3-30B-A3B-Base", "qwen3_moe")  # a variant keeps its family's
    assert not is_own_checkpoint("Qwen/Qwen2-VL-7B-Instruct", "qwen2_5_vl", ("Qwen2_5_VLForConditionalGeneration",))


def test_a_default_config_id_works_wherever_an_id_is_used(tmp_path):
    """``sweep one`` finds it from its repro command, it builds from the default config
    (never asks the Hub), and it is no Hub link on the page or in the report."""
    import shlex

    from sweeper.checks.repro import repro_command
    from sweeper.report.escape import model_link
    from sweeper.sources.resolve import resolve_model
    from sweeper.storage.fingerprint import config_origin

    ref = {r.model_type: r for r in itertools.islice(ZooSource(None).refs(), 100)}["segformer"]
    cfg = SweepConfig.of(source="zoo", device="cpu")
    command = shlex.split(repro_command(ref, cfg))
    assert command[-1] == "segformer (default config)"
    assert resolve_model(command[-1], cfg) == ref
    assert config_origin(ref.__class__(model_id=ref.model_id, rank=1, model_type="segformer"), cfg, offline=False) == ("default",)
    assert "huggingface.co" not in model_link(ref.model_id)


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
