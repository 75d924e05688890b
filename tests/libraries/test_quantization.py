"""Quantized checkpoints are tried as they ship: the method is known (config, else id), the
tiny build is quantized by the method's own loader, and a method that cannot be applied
is named on the record, never run as the float model."""

from __future__ import annotations

import csv
import importlib.util
from pathlib import Path

import pytest

from sweeper.checks.checker import check_model
from sweeper.libraries.quantization import detect, from_id
from sweeper.records import ModelRef, Origin, ReasonKind, Status
from sweeper.settings.config import SweepConfig

NEEDS_BNB = pytest.mark.skipif(importlib.util.find_spec("bitsandbytes") is None,
                               reason="bitsandbytes is not installed (the [quantization] extra)")
NEEDS_GPTQMODEL = pytest.mark.skipif(importlib.util.find_spec("gptqmodel") is None,
                                     reason="gptqmodel is not installed (the [quantization] extra)")
NEEDS_COMPRESSED_TENSORS = pytest.mark.skipif(importlib.util.find_spec("compressed_tensors") is None,
                                              reason="compressed-tensors is not installed (the [quantization] extra)")
TOP1000 = Path(__file__).resolve().parents[3] / "shared" / "catalogs" / "hub-top1000-2025-03.csv"

# A tiny Llama's config.json as the Hub gives a repo saved with bitsandbytes NF4.
TINY_LLAMA = {"model_type": "llama", "architectures": ["LlamaForCausalLM"], "hidden_size": 64, "intermediate_size": 128,
              "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2, "vocab_size": 256}
BNB_NF4 = {"quant_method": "bitsandbytes", "load_in_4bit": True, "bnb_4bit_quant_type": "nf4",
           "bnb_4bit_use_double_quant": True, "bnb_4bit_compute_dtype": "float32"}
GPTQ = {"quant_method": "gptq", "bits": 4, "group_size": 128, "desc_act": False, "sym": True}
AWQ = {"quant_method": "awq", "bits": 4, "group_size": 128, "zero_point": True, "version": "gemm"}
# As neuralmagic's -FP8-Dynamic repos ship it: float8 weights per channel, activations per token.
FP8 = {"quant_method": "compressed-tensors", "format": "float-quantized", "ignore": ["lm_head"],
       "config_groups": {"group_0": {"targets": ["Linear"],
                                     "weights": {"num_bits": 8, "type": "float", "strategy": "channel", "symmetric": True,
                                                 "dynamic": False},
                                     "input_activations": {"num_bits": 8, "type": "float", "strategy": "token",
                                                           "symmetric": True, "dynamic": True}}}}


# The quantized PyTorch repos of the shared top-1,000 snapshot (the MLX "-4bit" repos are MLX).
TOP1000_QUANTIZED = {
    "unsloth/Qwen2.5-7B-Instruct-bnb-4bit", "unsloth/Meta-Llama-3.1-8B-Instruct-bnb-4bit",
    "unsloth/DeepSeek-R1-Distill-Llama-8B-unsloth-bnb-4bit", "unsloth/Qwen2.5-7B-Instruct-unsloth-bnb-4bit",
    "unsloth/Llama-3.2-3B-Instruct-unsloth-bnb-4bit", "unsloth/Meta-Llama-3.1-8B-Instruct-unsloth-bnb-4bit",
    "cecibas/Midnight-Miqu-70B-v1.5-4bit", "alicekyting/Qwen2-Audio-7B-Instruct-4bit", "sayakpaul/flux.1-dev-nf4",
    "Qwen/Qwen2.5-32B-Instruct-GPTQ-Int4", "thesven/Mistral-7B-Instruct-v0.3-GPTQ", "TheBloke/Mixtral-8x7B-Instruct-v0.1-GPTQ",
    "kosbu/Llama-3.3-70B-Instruct-AWQ", "hugging-quants/Meta-Llama-3.1-8B-Instruct-AWQ-INT4", "OpenGVLab/InternVL2-8B-AWQ",
    "Qwen/Qwen2.5-VL-72B-Instruct-AWQ", "Qwen/Qwen2.5-VL-7B-Instruct-AWQ",
    "neuralmagic/Meta-Llama-3.1-70B-Instruct-FP8", "neuralmagic/Mistral-Small-24B-Instruct-2501-FP8-Dynamic",
    "yejingfu/nmagic-Meta-Llama-3.1-8B-Instruct-FP8",
}  # fmt: skip


def _ref(model_id: str, quantization: dict | None, *, library: str = "transformers") -> ModelRef:
    config = {**TINY_LLAMA, **({"quantization_config": quantization} if quantization else {})}
    return ModelRef(model_id, 1, downloads=1000, library_name=library, model_type="llama", config=config, source="catalog")


def _check(ref: ModelRef, device: str, **settings):
    return check_model(ref, SweepConfig.of(device=device, collect_all=True, **settings))


@pytest.mark.parametrize(("model_id", "method", "bits"), [
    ("unsloth/Qwen2.5-7B-Instruct-bnb-4bit", "bitsandbytes", 4),
    ("unsloth/Llama-3.2-3B-Instruct-unsloth-bnb-4bit", "bitsandbytes", 4),
    ("cecibas/Midnight-Miqu-70B-v1.5-4bit", "bitsandbytes", 4),
    ("sayakpaul/flux.1-dev-nf4", "bitsandbytes", 4),
    ("Qwen/Qwen2.5-32B-Instruct-GPTQ-Int4", "gptq", 4),
    ("thesven/Mistral-7B-Instruct-v0.3-GPTQ", "gptq", 4),
    ("hugging-quants/Meta-Llama-3.1-8B-Instruct-AWQ-INT4", "awq", 4),
    ("neuralmagic/Meta-Llama-3.1-70B-Instruct-FP8", "compressed-tensors", 8),
    ("yejingfu/nmagic-Meta-Llama-3.1-8B-Instruct-FP8", "compressed-tensors", 8),
    ("Qwen/Qwen3-8B-FP8", "fp8", 8),
])
def test_an_id_that_names_its_method_is_detected_offline(model_id, method, bits):
    found = detect(ModelRef(model_id, 1))
    assert found is not None and (found["method"], found["bits"], found["source"]) == (method, bits, "id"), found
    assert found["evidence"].startswith("the id says") and found["applied"] is False


@pytest.mark.parametrize("model_id", ["google-bert/bert-base-uncased", "openai/whisper-large-v3", "timm/resnet50.a1_in1k",
                                      "Qwen/Qwen2.5-7B-Instruct", "facebook/bart-large-cnn"])
def test_a_plain_id_names_no_method(model_id):
    assert from_id(model_id) is None


def test_the_config_says_more_than_the_id():
    found = detect(_ref("org/plain-name", GPTQ))
    assert (found["method"], found["bits"], found["format"], found["source"], found["group_size"]) == ("gptq", 4, "int4", "config", 128)
    assert detect(_ref("org/plain-name", FP8))["format"] == "float8"


@NEEDS_BNB
def test_a_bnb_nf4_repo_is_built_with_bitsandbytes_layers_and_runs_on_cpu():
    import bitsandbytes as bnb

    from sweeper.libraries import build

    ref = _ref("org/tiny-llama-nf4", BNB_NF4)
    built = build(ref, SweepConfig.of(device="cpu"))
    assert any(isinstance(m, bnb.nn.Linear4bit) for m in built.model.modules())
    assert built.quantization["applied"] is True and built.quantization["format"] == "nf4"

    record = _check(ref, "cpu", stages=["load", "to_device", "forward", "backward"])
    assert record.status is Status.PASS, record.reason
    q = record.quantization
    assert (q["method"], q["bits"], q["source"], q["package"], q["applied"]) == ("bitsandbytes", 4, "config", "bitsandbytes", True)
    assert record.versions["bitsandbytes"] == q["package_version"] != "absent"
    assert "QLoRA" in q["adapter"]  # backward trains the adapter, as a 4-bit base is trained


@NEEDS_BNB
def test_on_trnsim_a_bnb_repo_gets_the_verdict_its_kernels_earn_judged_against_the_quantized_cpu_model():
    import torch

    record = _check(_ref("org/tiny-llama-nf4", BNB_NF4), "trnsim", stages=["load", "to_device", "forward", "backward", "compile"])
    assert record.quantization["applied"] is True
    # Eager: bitsandbytes' portable kernels run on the device and match the quantized model
    # on the CPU (the float model's outputs are further off than the tolerance allows).
    for stage in ("load", "to_device", "forward", "backward"):
        assert record.stages[stage].status is Status.PASS, (stage, record.stages[stage])
    assert record.max_abs_diff is not None and record.max_abs_diff < 1e-5
    from sweeper.libraries import build

    quantized = build(_ref("org/tiny-llama-nf4", BNB_NF4), SweepConfig.of(device="cpu"))
    plain = build(_ref("org/tiny-llama", None), SweepConfig.of(device="cpu"))
    with torch.no_grad():
        gap = (quantized.model(**quantized.inputs).logits - plain.model(**plain.inputs).logits).abs().max().item()
    assert gap > 100 * max(record.max_abs_diff, 1e-7)
    # Compiled: the package's custom op is named with its package and its origin.
    compiled = record.stages["compile"]
    assert compiled.status is Status.FAIL and compiled.reason.op.startswith("bitsandbytes::"), compiled
    assert compiled.reason.origin in (Origin.DEVICE, Origin.LOWERING_TOOL)


@NEEDS_GPTQMODEL
@pytest.mark.parametrize(("quantization", "kernel"), [(GPTQ, "TorchLinear"), (AWQ, "AwqTorchLinear")], ids=["gptq", "awq"])
def test_a_gptq_or_awq_repo_loads_packed_weights_into_gptqmodels_layers_and_runs_on_cpu(quantization, kernel):
    from sweeper.libraries import build

    ref = _ref(f"org/tiny-llama-{quantization['quant_method']}", quantization)
    built = build(ref, SweepConfig.of(device="cpu"))
    kernels = {type(m).__name__ for m in built.model.modules() if type(m).__module__.startswith("gptqmodel.")}
    assert kernels == {kernel}, kernels  # the portable torch kernel, never the CPU-only int4pack one
    assert built.quantization["layers"] == 7 and built.quantization["kernel"] == kernel  # every linear of the block

    record = _check(ref, "cpu", stages=["load", "to_device", "forward", "backward"])
    assert record.status is Status.PASS, record.reason
    q = record.quantization
    assert (q["method"], q["bits"], q["source"], q["package"], q["applied"]) == \
        (quantization["quant_method"], 4, "config", "gptqmodel", True)
    assert record.versions["gptqmodel"] == q["package_version"] != "absent" and "QLoRA" in q["adapter"]


@NEEDS_GPTQMODEL
def test_on_trnsim_awq_runs_eagerly_against_the_quantized_cpu_model_and_gptq_names_its_inductor_compile():
    awq = _check(_ref("org/tiny-llama-awq", AWQ), "trnsim", stages=["load", "to_device", "forward", "backward"])
    assert awq.status is Status.PASS, awq.reason
    assert awq.max_abs_diff is not None and awq.max_abs_diff < 1e-5
    # gptqmodel compiles GPTQ's dequantise with Inductor on every device but NPU and MPS:
    # a new device without Inductor code generation fails its forward there.
    gptq = _check(_ref("org/tiny-llama-gptq", GPTQ), "trnsim", stages=["load", "to_device", "forward"])
    assert gptq.stages["to_device"].status is Status.PASS
    assert gptq.stages["forward"].status is Status.FAIL, gptq.reason
    assert (gptq.reason.kind, gptq.reason.op) == (ReasonKind.UNSUPPORTED_FEATURE, "inductor codegen (gptqmodel)"), gptq.reason
    assert "no code generation for device 'trnsim'" in gptq.reason.message
    assert gptq.reason.origin is Origin.DEVICE and gptq.quantization["applied"] is True
    # gptqmodel's import raised Dynamo's recompile limit (imported by the AWQ check before):
    # each of its models is compiled under that limit, as its users' are; any other model's
    # check starts under torch's own (tests/core/test_dynamo_settings.py).
    from torch._dynamo import config

    assert config.recompile_limit == 128


@NEEDS_COMPRESSED_TENSORS
def test_an_fp8_compressed_tensors_repo_runs_its_float8_layers_on_cpu_and_trnsim_names_the_dtype():
    import torch

    from sweeper.libraries import build

    ref = _ref("org/tiny-llama-FP8-Dynamic", FP8)
    built = build(ref, SweepConfig.of(device="cpu"))
    schemes = [m for m in built.model.modules() if getattr(m, "quantization_scheme", None) is not None]
    assert len(schemes) == 7 and built.quantization["kernel"] == "float-quantized"
    assert built.model.lm_head.weight.dtype == torch.float32  # the repo's ignore list stays float

    record = _check(ref, "cpu", stages=["load", "to_device", "forward", "backward"])
    assert record.status is Status.PASS, record.reason
    assert (record.quantization["package"], record.quantization["applied"]) == ("compressed-tensors", True)
    # trnsim has no float8: the per-token activation quantization is refused on the device.
    device = _check(ref, "trnsim", stages=["load", "to_device", "forward"])
    assert device.stages["to_device"].status is Status.PASS
    assert device.reason.kind is ReasonKind.UNSUPPORTED_DTYPE and "float8_e4m3fn" in device.reason.message, device.reason
    assert device.reason.origin is Origin.DEVICE


@pytest.mark.parametrize(("quantization", "package"), [({"quant_method": "hqq", "nbits": 4}, "hqq"),
                                                        ({"quant_method": "aqlm", "in_group_size": 8}, "aqlm")])
def test_a_method_that_cannot_be_applied_is_named_never_run_as_the_float_model(quantization, package):
    if importlib.util.find_spec(package.replace("-", "_")) is not None:
        pytest.skip(f"{package} is installed here")
    record = _check(_ref("org/tiny-llama-quantized", quantization), "cpu", stages=["load", "to_device", "forward"])
    assert record.status is not Status.PASS
    assert record.reason.kind is ReasonKind.MISSING_DEPENDENCY and record.reason.op == package, record.reason
    assert record.quantization["applied"] is False and package in record.quantization["why"]
    assert record.stages["forward"].status is Status.BLOCKED


def test_a_method_whose_package_is_here_but_not_applied_is_the_harness_s_never_a_float_run():
    # transformers' own fine-grained FP8 (quant_method "fp8") is importable but not applied.
    record = _check(_ref("org/tiny-llama-fp8", {"quant_method": "fp8", "weight_block_size": [128, 128]}), "cpu",
                    stages=["load", "forward"])
    assert record.status is not Status.PASS and record.reason.origin is Origin.HARNESS, record.reason
    assert record.quantization["applied"] is False and "does not yet apply fp8" in record.quantization["why"]


@NEEDS_BNB
def test_a_diffusers_nf4_repo_goes_through_diffusers_quantizer_which_names_its_gpu_requirement():
    # diffusers' bitsandbytes quantizer refuses to quantize unless CUDA, XPU or MPS is present:
    # on a new device (and on this CPU) the NF4 pipeline is never loaded, and the record says so.
    record = _check(ModelRef("sayakpaul/flux.1-dev-nf4", 1, library_name="diffusers", source="catalog"), "cpu",
                    stages=["load", "forward"])
    assert record.status is not Status.PASS and record.stages["forward"].status is Status.BLOCKED
    q = record.quantization
    assert (q["method"], q["format"], q["applied"]) == ("bitsandbytes", "nf4", False)
    assert "diffusers' bitsandbytes loader" in q["why"] and "No GPU found" in q["why"], q["why"]


def test_a_plain_model_carries_no_quantization():
    record = _check(_ref("org/tiny-llama", None), "cpu", stages=["load", "forward"])
    assert record.status is Status.PASS and record.quantization == {}
    assert "quantization" in record.to_dict() and record.to_dict()["quantization"] == {}


@pytest.mark.skipif(not TOP1000.is_file(), reason=f"the shared top-1,000 catalog is absent ({TOP1000})")
def test_every_quantized_pytorch_repo_of_the_top_1000_is_named_by_its_id():
    from sweeper.libraries.formats import not_pytorch

    named = {}
    with TOP1000.open(encoding="utf-8") as f:
        for row in csv.DictReader(f):
            ref = ModelRef(row["id"], int(row["rank"]), library_name=row["library_name"] or None)
            if not_pytorch(ref) is None and (found := from_id(row["id"])) is not None:
                named[row["id"]] = found["method"]
    assert set(named) == TOP1000_QUANTIZED, sorted(set(named) ^ TOP1000_QUANTIZED)
    assert {named[i] for i in named if "bnb" in i.lower()} == {"bitsandbytes"}
    assert "mlx-community/Llama-3.2-1B-Instruct-4bit" not in named  # MLX stays not_pytorch
