"""Helpers shared by the trnsim tests (a plain module: test files import it by name)."""

from __future__ import annotations

import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch


class DeviceSkewedGrad(torch.autograd.Function):
    """Identity whose backward is off by 50% on the device: a wrong backward kernel."""

    @staticmethod
    def forward(ctx: Any, x: torch.Tensor) -> torch.Tensor:
        return x.clone()

    @staticmethod
    def backward(ctx: Any, grad: torch.Tensor) -> torch.Tensor:
        return grad * 1.5 if grad.device.type == "trnsim" else grad


def run_compiled(fn: Callable[..., torch.Tensor], *args: Any, backward: bool = True, whole_graph: bool = False) -> torch.Tensor:
    """Compile ``fn`` for trnsim, run it (and its backward when it needs grad). With
    ``whole_graph``, as ``--whole-graph``: one graph, data-dependent ops captured into it."""
    import torch._dynamo

    capture = torch._dynamo.config.patch(capture_dynamic_output_shape_ops=whole_graph)
    with capture:
        out = torch.compile(fn, backend="trnsim", fullgraph=whole_graph)(*args)
        if backward and out.requires_grad:
            out.float().sum().backward()
    return out


def profile_without_parameter_identity(folder: Path) -> Path:
    """The default profile, modelling a backend without the ``_has_compatible_shallow_copy_type``
    override (``keeps_parameter_identity = false``), written under ``folder``."""
    from sweeper.devices.trnsim.profile import DEFAULT_PROFILE

    text = DEFAULT_PROFILE.read_text()
    assert "keeps_parameter_identity = true" in text
    path = folder / "trnsim-no-identity.toml"
    path.write_text(text.replace("keeps_parameter_identity = true", "keeps_parameter_identity = false"))
    return path


def root_cause(exc: BaseException) -> BaseException:
    """What the sweep classifies: BackendCompilerFailed's inner exception, or the cause."""
    inner = getattr(exc, "inner_exception", None)
    if inner is not None:
        return root_cause(inner)
    return exc


def tiny_model(name: str) -> tuple[torch.nn.Module, dict[str, torch.Tensor]]:
    """A tiny configuration of a real architecture and inputs for it (CPU, eval mode)."""
    import transformers as tf

    warnings.simplefilter("ignore")
    torch.manual_seed(0)
    ids = torch.randint(0, 100, (2, 8))
    small = {"num_hidden_layers": 2, "num_attention_heads": 2, "intermediate_size": 64, "hidden_size": 32}
    if name == "bert":
        model, inputs = tf.BertForMaskedLM(tf.BertConfig(vocab_size=100, **small)), {"input_ids": ids}
    elif name == "gpt2":
        cfg = tf.GPT2Config(n_embd=32, n_layer=2, n_head=2, vocab_size=100, n_positions=64,
                            bos_token_id=0, eos_token_id=0)
        model, inputs = tf.GPT2LMHeadModel(cfg), {"input_ids": ids}
    elif name == "vit":
        cfg = tf.ViTConfig(image_size=32, patch_size=8, num_labels=3, **small)
        model, inputs = tf.ViTForImageClassification(cfg), {"pixel_values": torch.randn(2, 3, 32, 32)}
    elif name == "t5":
        cfg = tf.T5Config(d_model=32, d_ff=64, num_layers=2, num_decoder_layers=2, num_heads=2, d_kv=16,
                          vocab_size=100, decoder_start_token_id=0, pad_token_id=0)
        model, inputs = tf.T5ForConditionalGeneration(cfg), {"input_ids": ids, "labels": ids}
    elif name == "whisper":
        cfg = tf.WhisperConfig(d_model=32, encoder_layers=2, decoder_layers=2, encoder_attention_heads=2,
                               decoder_attention_heads=2, encoder_ffn_dim=64, decoder_ffn_dim=64, vocab_size=100,
                               num_mel_bins=16, max_source_positions=16, max_target_positions=32,
                               decoder_start_token_id=1, pad_token_id=0)
        inputs = {"input_features": torch.randn(2, 16, 32), "decoder_input_ids": ids}
        model = tf.WhisperForConditionalGeneration(cfg)
    elif name == "wav2vec2":
        cfg = tf.Wav2Vec2Config(conv_dim=(16, 16), conv_stride=(5, 2), conv_kernel=(10, 3), num_conv_pos_embeddings=16,
                                num_conv_pos_embedding_groups=2, vocab_size=20, **small)
        model, inputs = tf.Wav2Vec2ForCTC(cfg), {"input_values": torch.randn(2, 400)}
    else:
        raise ValueError(name)
    return model.eval(), inputs
