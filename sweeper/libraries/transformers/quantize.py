"""A tiny transformers build quantized the way its method's loader quantizes the checkpoint.

The tiny model is saved (safetensors) and loaded back through transformers' quantizer with
the method's config, so its layers are the ones a user of the repo gets, not the float
layers of the same architecture:

- bitsandbytes quantizes on load (``Linear4bit`` / ``Linear8bitLt``);
- GPTQ and AWQ load packed integer weights into gptqmodel's layers (``quantize_packed``);
- compressed-tensors (the ``-FP8`` repos) loads float8 weights with their scales
  (``quantize_compressed``).

Other methods are named as not applied (``sweeper.libraries.quantization.not_applied``).

Training: a 4-bit or 8-bit base (bitsandbytes, GPTQ, AWQ) is trained in practice through a
LoRA adapter (QLoRA), so the build carries one (rank 8 on every linear layer, its B matrix
zero: the forward is the quantized base's) and the backward stage differentiates the
adapter, as a user's fine-tuning does. A compressed-tensors model trains as transformers
lets it (its quantizer says trainable: quantization-aware, the weights decompressed).
"""

from __future__ import annotations

import tempfile
from typing import Any

from sweeper.libraries.quantization import (
    QuantizationNotApplied,
    carrying,
    import_without_hub_kernels,
    importable,
    not_applied,
)

# Methods this builder applies.
APPLIES = frozenset({"bitsandbytes", "gptq", "awq", "compressed-tensors"})
# Methods trained in practice through a LoRA adapter on the quantized base.
ADAPTED = frozenset({"bitsandbytes", "gptq", "awq"})
LORA_RANK = 8


def quantize(model: Any, info: dict[str, Any], *, dtype: str) -> tuple[Any, dict[str, Any]]:
    """``model`` loaded back with ``info``'s method (and a QLoRA adapter), and the record's
    ``quantization`` with ``applied`` true; raises the method's ``not_applied`` error."""
    if info["method"] not in APPLIES or not importable(info["method"]):
        raise not_applied(info, "transformers", APPLIES)
    import torch

    method, torch_dtype = info["method"], getattr(torch, dtype)
    try:
        quantized, kernel = _APPLY[method](model, info, torch_dtype)
        layers = _quantized_layers(quantized)
        if not layers:
            raise QuantizationNotApplied(f"{method} quantized no layer of the tiny build", op=info["package"])
        found = {**info, "applied": True, "layers": len(layers), "kernel": kernel}
        if method not in ADAPTED:
            return quantized, found
        adapted = _with_lora(quantized, layers)
    except Exception as exc:  # noqa: BLE001 - the method's own loader (or the adapter) failed on this build
        why = str(exc) if isinstance(exc, QuantizationNotApplied) else \
            f"{info['package']} could not quantize the tiny build: {type(exc).__name__}: {exc}"
        raise carrying(QuantizationNotApplied(why[:500], op=info["package"]), info, why[:500]) from exc
    return adapted, {**found, "adapter": f"LoRA r={LORA_RANK} on every quantized linear layer (QLoRA), B zero: trained in backward"}


def _bitsandbytes(model: Any, info: dict[str, Any], dtype: Any) -> tuple[Any, str]:
    import_without_hub_kernels()
    quantized = _load_quantized(model, bitsandbytes_config(info, dtype), dtype)
    disable_cpu_layout(quantized)
    return quantized, "Linear8bitLt" if info.get("bits") == 8 else "Linear4bit"


def _packed(model: Any, info: dict[str, Any], dtype: Any) -> tuple[Any, str]:
    from sweeper.libraries.transformers.quantize_packed import quantize_packed

    return quantize_packed(model, info, dtype)


def _compressed(model: Any, info: dict[str, Any], dtype: Any) -> tuple[Any, str]:
    from sweeper.libraries.transformers.quantize_compressed import quantize_compressed

    return quantize_compressed(model, info, dtype)


_APPLY = {"bitsandbytes": _bitsandbytes, "gptq": _packed, "awq": _packed, "compressed-tensors": _compressed}


def _quantized_layers(model: Any) -> list[str]:
    """The names of the layers holding the method's quantized weights (any kernel package's)."""
    names = []
    for name, module in model.named_modules():
        kind = type(module)
        if kind.__module__.startswith(("bitsandbytes.", "gptqmodel.")) and kind.__name__.endswith("Linear") or \
                kind.__name__ in ("Linear4bit", "Linear8bitLt"):
            names.append(name)
        elif getattr(module, "quantization_scheme", None) is not None and hasattr(module, "weight"):
            names.append(name)  # compressed-tensors keeps nn.Linear and attaches its scheme
    return names


def bitsandbytes_config(info: dict[str, Any], compute: Any, config_class: Any = None) -> Any:
    """The ``BitsAndBytesConfig`` (transformers', or ``config_class``: diffusers' has the same
    fields) that loads ``info``'s 4-bit or 8-bit format, computing in ``compute``."""
    if config_class is None:
        from transformers import BitsAndBytesConfig as config_class
    if info.get("bits") == 8:
        return config_class(load_in_8bit=True)
    quant_type = info.get("format") if info.get("format") in ("nf4", "fp4") else "nf4"
    return config_class(load_in_4bit=True, bnb_4bit_quant_type=quant_type, bnb_4bit_compute_dtype=compute,
                        bnb_4bit_use_double_quant=bool(info.get("bnb_4bit_use_double_quant", False)))


def _load_quantized(model: Any, method_config: Any, dtype: Any) -> Any:
    """Save ``model`` and load it back through transformers' quantizer (on the CPU)."""
    config = model.config
    if hasattr(config, "quantization_config"):
        # The repo's own (a pre-quantized checkpoint's) would describe weights this tiny
        # float save does not hold: the method's on-load config quantizes them instead.
        del config.quantization_config
    with tempfile.TemporaryDirectory(prefix="sweeper-quantize-") as folder:
        model.save_pretrained(folder, safe_serialization=True)
        loaded = type(model).from_pretrained(folder, quantization_config=method_config, device_map="cpu", dtype=dtype)
    return loaded.eval()


def disable_cpu_layout(model: Any) -> None:
    """Each 4-bit layer keeps bitsandbytes' portable layout.

    On a CPU with AVX512-BF16, bitsandbytes repacks a 4-bit weight in place on its first
    CPU inference into a CPU-only layout computed in bfloat16; ``Params4bit.to`` moves that
    layout to any device but CUDA and XPU unchanged, where it reads as other weights. The
    CPU reference must run the kernel the device is judged against (float32, the portable
    layout), and the device must get the weights the checkpoint holds.
    """
    import bitsandbytes as bnb

    for module in model.modules():
        if isinstance(module, bnb.nn.Linear4bit):
            module.support_avx512bf16_for_cpu = False


def _with_lora(model: Any, layers: list[str]) -> Any:
    """The QLoRA set-up: a LoRA adapter on every quantized linear layer (named, since peft's
    "all-linear" knows bitsandbytes' layers but not gptqmodel's); without peft, the base
    alone (its backward then has no trainable weight, as a user without an adapter meets it)."""
    import importlib.util
    import re

    if importlib.util.find_spec("peft") is None:
        return model
    from peft import LoraConfig, get_peft_model

    from sweeper.libraries.transformers.quantize_packed import before_lora

    before_lora()
    # Full names (a leaf name such as "0" or "proj" would also match containers).
    targets = "^(" + "|".join(re.escape(name) for name in layers) + ")$"
    return get_peft_model(model, LoraConfig(r=LORA_RANK, lora_alpha=2 * LORA_RANK, target_modules=targets,
                                            lora_dropout=0.0, init_lora_weights=True))
