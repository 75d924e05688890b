"""Tiny configurations of real architectures on trnsim: the outcome a sweep records for
each, eager and compiled. Eager: every one runs natively and matches the CPU. Compiled:
every one lowers completely once the graph is canonicalised and decomposed as a vendor
compiler does (weight-norm and convolution backward, slice bounds)."""

from __future__ import annotations

import pytest
import torch
from trnsim_helpers import root_cause, tiny_model

MODELS = ["bert", "gpt2", "vit", "t5", "whisper", "wav2vec2"]


def _on_trnsim(model: torch.nn.Module, inputs: dict) -> tuple[torch.nn.Module, dict]:
    from sweeper.devices.trnsim import retie_fix

    with retie_fix():
        model = model.to("trnsim")
    return model, {k: v.to("trnsim") for k, v in inputs.items()}


@pytest.mark.parametrize("name", MODELS)
def test_eager_forward_backward_native_and_close_to_cpu(trnsim, name):
    model, inputs = tiny_model(name)
    with torch.no_grad():
        expected = model(**inputs).logits
    model, dev_inputs = _on_trnsim(model, inputs)
    with trnsim.recording() as rec:
        out = model(**dev_inputs).logits
        out.float().sum().backward()
    torch.testing.assert_close(out.detach().cpu(), expected, rtol=1e-4, atol=1e-5)
    assert rec.fallback_ops == {} and rec.errors == []
    assert all(p.grad is None or p.grad.device.type == "trnsim" for p in model.parameters())
    assert sum(p.grad is not None for p in model.parameters()) > 0


def _compile_outcome(trnsim, name: str) -> tuple[BaseException | None, torch.Tensor | None, dict]:
    model, inputs = tiny_model(name)
    with torch.no_grad():
        expected = model(**inputs).logits
    model, dev_inputs = _on_trnsim(model, inputs)
    try:
        out = torch.compile(model, backend="trnsim")(**dev_inputs).logits
        out.float().sum().backward()
    except Exception as exc:  # noqa: BLE001 - the verdict is the exception
        return root_cause(exc), None, {}
    return None, out.detach().cpu(), {"expected": expected}


@pytest.mark.parametrize("name", ["bert", "gpt2", "vit", "wav2vec2",
                                  pytest.param("whisper", marks=pytest.mark.slow),
                                  pytest.param("t5", marks=pytest.mark.slow)])
def test_compiled_passes(trnsim, name):
    from sweeper.devices.trnsim import compiler

    compiler.reset_lowered()
    with trnsim.recording() as rec:
        exc, out, ref = _compile_outcome(trnsim, name)
    assert exc is None, f"{name}: {exc!r}"
    torch.testing.assert_close(out, ref["expected"], rtol=1e-4, atol=1e-5)
    assert rec.compile_problems == [] and rec.blockers == []
    assert {"forward", "backward"} <= {kind for kind, _ in compiler.LOWERED}
