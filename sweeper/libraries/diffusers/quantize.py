"""A quantized diffusers repo's denoiser, quantized the way diffusers' loader does.

The NF4 Flux and SD3 repos (``sayakpaul/flux.1-dev-nf4``, ...) ship their denoiser (the
transformer or UNet, nearly all of the pipeline's weights) in bitsandbytes 4-bit. The tiny
denoiser is saved and loaded back through diffusers' own quantizer with its
``BitsAndBytesConfig``, so its layers are bitsandbytes' ``Linear4bit``; a LoRA adapter on
its attention projections (B zero, as QLoRA starts) is what its backward trains. The other
components stay as the pipeline builds them.
"""

from __future__ import annotations

import tempfile
from typing import Any

from sweeper.libraries.quantization import QuantizationNotApplied, carrying, importable, not_applied

APPLIES = frozenset({"bitsandbytes"})
DENOISERS = ("transformer", "unet")
LORA_RANK = 8


def check_applicable(info: dict[str, Any]) -> None:
    """Raise the record's error when diffusers builds cannot take ``info``'s method here."""
    if info["method"] not in APPLIES or not importable(info["method"]):
        raise not_applied(info, "diffusers", APPLIES)


def quantize_denoiser(components: dict[str, Any], info: dict[str, Any], dtype: Any, lora_targets: list[str]) -> dict[str, Any]:
    """The pipeline's denoiser (``components[name].model.model``) replaced by its quantized
    copy with a LoRA adapter on ``lora_targets``; returns the record's ``quantization``."""
    name = next((n for n in DENOISERS if n in components), None)
    if name is None:
        raise carrying(QuantizationNotApplied("the pipeline has no transformer or UNet to quantize", op="bitsandbytes"),
                       info, "no denoiser component")
    wrapper = components[name].model
    try:
        quantized = _load_quantized(wrapper.model, info, dtype)
        layers = _lora(quantized, lora_targets)
    except Exception as exc:  # noqa: BLE001 - diffusers' loader (or the adapter) failed on this build
        why = f"diffusers' bitsandbytes loader could not quantize the tiny {name}: {type(exc).__name__}: {exc}"[:500]
        raise carrying(QuantizationNotApplied(why, op="bitsandbytes"), info, why) from exc
    wrapper.model = quantized
    return {**info, "applied": True, "layers": layers, "component": name,
            "kernel": "Linear8bitLt" if info.get("bits") == 8 else "Linear4bit",
            "adapter": f"LoRA r={LORA_RANK} on the {name}'s attention projections (QLoRA), B zero: trained in backward"}


def _load_quantized(model: Any, info: dict[str, Any], dtype: Any) -> Any:
    from diffusers import BitsAndBytesConfig

    from sweeper.libraries.quantization import import_without_hub_kernels
    from sweeper.libraries.transformers.quantize import bitsandbytes_config, disable_cpu_layout

    import_without_hub_kernels()
    config = bitsandbytes_config(info, dtype, BitsAndBytesConfig)
    with tempfile.TemporaryDirectory(prefix="sweeper-quantize-") as folder:
        model.save_pretrained(folder, safe_serialization=True)
        loaded = type(model).from_pretrained(folder, quantization_config=config, torch_dtype=dtype, device_map="cpu")
    disable_cpu_layout(loaded)
    return loaded.eval()


def _lora(model: Any, targets: list[str]) -> int:
    """A LoRA adapter on the attention projections of the quantized denoiser (B zero);
    returns the number of quantized layers."""
    import bitsandbytes as bnb
    from peft import LoraConfig

    from sweeper.libraries.transformers.quantize_packed import before_lora

    before_lora()
    layers = sum(1 for m in model.modules() if isinstance(m, (bnb.nn.Linear4bit, bnb.nn.Linear8bitLt)))
    if not layers:
        raise QuantizationNotApplied("bitsandbytes quantized no layer of the tiny denoiser", op="bitsandbytes")
    model.add_adapter(LoraConfig(r=LORA_RANK, lora_alpha=2 * LORA_RANK, target_modules=targets, init_lora_weights=True))
    return layers
