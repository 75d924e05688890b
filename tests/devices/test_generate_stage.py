"""The generate stage: models that generate are run as their users run them (greedy
decoding eager, and compiled with a static cache as transformers documents), their tokens
judged against the CPU's; a model that does not generate has no such stage."""

from __future__ import annotations

import warnings
from typing import Any

import pytest
import torch

from sweeper.checks import stages
from sweeper.checks.checker import check_model
from sweeper.libraries.built import Built
from sweeper.records import ModelRef, Origin, ReasonKind, Status
from sweeper.settings.config import SweepConfig
from sweeper.sources.zoo import zoo_ref

GENERATE = ("load", "to_device", "forward", "generate")


def _sweep(model_type: str, device: str, **settings: Any) -> Any:
    return check_model(zoo_ref(model_type, 1), SweepConfig.of(device=device, **settings))


def test_a_tiny_llama_passes_forward_and_compile_on_trnsim_and_fails_compiled_generation_on_index_copy(trnsim):
    record = _sweep("llama", "trnsim", stages=("load", "to_device", "forward", "compile", "generate"))
    assert {k: v.status for k, v in record.stages.items()} == {
        "load": Status.PASS, "to_device": Status.PASS, "forward": Status.PASS, "compile": Status.PASS,
        "generate": Status.FAIL}
    reason = record.stages["generate"].reason
    assert (reason.kind, reason.op, reason.origin, reason.stage) == (
        ReasonKind.UNSUPPORTED_OP, "aten::index_copy", Origin.DEVICE, "generate")
    assert record.reason == reason and record.outcome.value == "device"
    # Eager decoding on the device gives the CPU's tokens; the static cache's update is what fails.
    found = record.generation
    assert found["kind"] == "decoder-only" and found["class"] == "LlamaForCausalLM"
    assert found["eager"]["tokens_equal"] is True and found["eager"]["cache"] == "DynamicCache"
    assert found["compiled"]["cache_implementation"] == "static" and "tokens_equal" not in found["compiled"]


@pytest.mark.parametrize("backend", ["aot_eager", "inductor"])
def test_compiled_generation_on_the_cpu_gives_the_eager_tokens_with_one_prefill_and_one_decode_compile(backend):
    torch._dynamo.reset()
    record = _sweep("llama", "cpu", stages=GENERATE, compile_backend=backend)
    assert record.stages["generate"].status is Status.PASS, record.reason
    compiled = record.generation["compiled"]
    assert (compiled["backend"], compiled["cache"], compiled["tokens_equal"]) == (backend, "StaticCache", True)
    # The recipe working: the prefill compiles, the first decode step compiles, later steps reuse it.
    assert compiled["compiles_per_step"] == [1, 1, 0, 0, 0, 0, 0, 0]
    assert compiled["recompiles"] == 0 and compiled["recompiles_every_step"] is False
    assert record.generation["tokens_equal"] is True and record.generation["new_tokens"] == 8


@pytest.mark.parametrize("model_type,cls", [("t5", "T5ForConditionalGeneration"),
                                            ("whisper", "WhisperForConditionalGeneration")])
def test_seq2seq_and_speech_models_generate_on_the_cpu_and_get_their_verdict_on_trnsim(trnsim, model_type, cls):
    on_cpu = _sweep(model_type, "cpu", stages=GENERATE, compile_backend="aot_eager")
    assert on_cpu.stages["generate"].status is Status.PASS, on_cpu.reason
    assert on_cpu.generation["kind"] == "encoder-decoder" and on_cpu.generation["class"] == cls
    assert on_cpu.generation["compiled"]["cache"] == "EncoderDecoderCache"
    on_device = _sweep(model_type, "trnsim", stages=GENERATE)
    assert on_device.generation["eager"]["tokens_equal"] is True
    assert on_device.stages["generate"].reason.op == "aten::index_copy"


def test_an_encoder_has_no_generate_stage(trnsim):
    record = _sweep("bert", "trnsim", stages=GENERATE)
    assert record.status is Status.PASS
    assert "generate" not in record.stages and record.generation == {}


class _Planted(torch.nn.Module):
    """A tiny Llama whose logits are changed at the fourth decoding step: ``flip`` makes the
    device pick a token the CPU scores far below its best (a wrong kernel); ``tie`` makes the
    CPU's two best logits equal to 1e-6 and the device pick the other one."""

    def __init__(self, plant: str) -> None:
        super().__init__()
        import transformers as tf

        warnings.simplefilter("ignore")
        torch.manual_seed(0)
        config = tf.LlamaConfig(vocab_size=64, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                                num_attention_heads=2, num_key_value_heads=2, pad_token_id=0, eos_token_id=1)
        self.lm = tf.LlamaForCausalLM(config).eval()
        self.plant = plant
        self.lm.register_forward_hook(self._hook)

    def _hook(self, module: Any, args: Any, kwargs_out: Any) -> Any:
        logits = kwargs_out.logits
        cache = kwargs_out.get("cache") or kwargs_out.get("past_key_values")
        if cache is None or cache.get_seq_length() != PROMPT + 4:
            return kwargs_out
        row = logits[0, -1]
        best, other = int(row.argmax()), int(row.argsort()[-5])
        on_device = logits.device.type == "trnsim"
        top = float(row.max())
        if self.plant == "flip" and on_device:
            row[other] = top + 5.0
        elif self.plant == "tie":
            row[best], row[other] = top + 10.0, top + 10.0
            row[other if on_device else best] += 1e-6 * 16  # one float32 step at this magnitude
        return kwargs_out


PROMPT = 8


def _planted(monkeypatch: pytest.MonkeyPatch, plant: str) -> Any:
    def build(ref: ModelRef, _cfg: SweepConfig) -> Built:
        model = _Planted(plant).lm
        ids = torch.randint(2, 64, (2, PROMPT), generator=torch.Generator().manual_seed(0))
        return Built(model=model, inputs={"input_ids": ids, "attention_mask": torch.ones_like(ids)},
                     architecture="LlamaForCausalLM", model_type="llama", num_parameters=1)

    monkeypatch.setattr(stages, "build_model", build)
    cfg = SweepConfig.of(device="trnsim", stages=GENERATE)
    return check_model(ModelRef(model_id=f"test/planted-{plant}", rank=1), cfg)


def test_a_kernel_that_flips_one_logit_past_tolerance_mid_decode_is_a_numerics_verdict(trnsim, monkeypatch):
    record = _planted(monkeypatch, "flip")
    numerics = [b for b in record.blockers if b.kind is ReasonKind.NUMERICS]
    assert numerics and numerics[0].stage == "generate" and numerics[0].origin is Origin.DEVICE
    assert "eager generate picked token" in numerics[0].message and "not a tie" in numerics[0].message
    eager = record.generation["eager"]
    assert eager["verdict"] == "numerics" and eager["first_divergence"]["step"] == 4


def test_a_near_tie_that_the_device_breaks_the_other_way_is_a_tie_not_a_numerics_verdict(trnsim, monkeypatch):
    record = _planted(monkeypatch, "tie")
    assert not [b for b in record.blockers if b.kind is ReasonKind.NUMERICS], record.blockers
    eager = record.generation["eager"]
    assert (eager["tokens_equal"], eager["verdict"]) == (False, "tie")
    assert eager["first_divergence"]["step"] == 4 and eager["first_divergence"]["cpu_top2_gap"] < 1e-3


def test_a_stable_diffusion_pipeline_samples_two_steps_eager_and_with_its_unet_compiled():
    torch._dynamo.reset()
    ref = ModelRef(model_id="stable-diffusion-v1-5/stable-diffusion-v1-5", rank=1, library_name="diffusers",
                   pipeline_tag="text-to-image")
    record = check_model(ref, SweepConfig.of(device="cpu", stages=GENERATE, compile_backend="aot_eager"))
    assert record.stages["generate"].status is Status.PASS, record.reason
    assert list(record.stages) == ["load", "to_device", "forward", "generate"]
    found = record.generation
    assert (found["kind"], found["pipeline"], found["steps"]) == ("diffusion", "StableDiffusionPipeline", 2)
    assert found["eager"]["within"] and found["compiled"]["within"] and found["compiled"]["backend"] == "aot_eager"


def test_a_pipeline_without_a_sampling_entry_has_no_generate_stage():
    ref = ModelRef(model_id="stabilityai/sd-vae-ft-mse", rank=1, library_name="diffusers")
    record = check_model(ref, SweepConfig.of(device="cpu", stages=GENERATE))
    assert record.status is Status.PASS, record.reason
    assert "generate" not in record.stages and record.generation == {}


def test_compiled_decoding_that_recompiles_at_every_step_on_a_static_shape_device_says_so(trnsim):
    # Mistral's sliding-window mask guards on the cache position: each token is a new graph
    # on trnsim (static shapes only); --collect-all lets the refused index_copy pass by.
    record = _sweep("mistral", "trnsim", stages=GENERATE, collect_all=True)
    compiled = record.generation["compiled"]
    assert compiled["recompiles_every_step"] is True and compiled["recompiles"] >= 4
    # The mode ran on past the refused static-cache update: it keeps that refusal as its own.
    assert "unsupported_op aten::index_copy" in compiled["blockers"] and "blockers" not in record.generation["eager"]
    shapes = [b for b in record.blockers if b.kind is ReasonKind.DYNAMIC_SHAPE]
    assert shapes and shapes[0].stage == "generate" and "compiled anew at every step" in shapes[0].message
    assert shapes[0].origin is Origin.DEVICE


def test_tokens_of_a_model_whose_output_moves_with_the_seed_are_not_judged(trnsim, monkeypatch):
    from sweeper.checks import generation

    moving = {"nondeterministic": {"max_abs": 0.01, "max_rel": 0.001, "within": False}}
    monkeypatch.setattr(generation, "_unless_unjudgeable",
                        lambda ctx, v, real=generation._unless_unjudgeable: real(
                            type("Ctx", (), {"findings": {"numerics": moving}})(), v))
    record = _planted(monkeypatch, "flip")
    assert not [b for b in record.blockers if b.kind is ReasonKind.NUMERICS], record.blockers
    eager = record.generation["eager"]
    assert eager["verdict"] == "not_judged" and "moves with the seed" in eager["why"]
