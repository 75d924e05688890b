"""compressed-tensors checkpoints (FP8, and int weights) of a tiny build.

A neuralmagic / RedHatAI ``-FP8`` repo stores float8 weights with their scales in
compressed-tensors' format, and transformers loads it through compressed-tensors, whose
layers decompress the weights and quantize activations on the fly (casts to
``float8_e4m3fn`` and back, with their scales) on a device without FP8 matmul kernels —
every CPU and a new accelerator. The tiny build is written in that format and loaded back
the same way: the repo's own ``quantization_config`` where the config carries it, else the
scheme its id names (FP8 dynamic, W4A16, W8A8 presets). Weight scales come from each
layer's min and max (no calibration: the format and the kernels are the repo's, the values
are not what a device is judged on).
"""

from __future__ import annotations

import tempfile
from typing import Any

# The preset scheme an id names, by the number format detected.
PRESETS = {"float8": "FP8_DYNAMIC", "int4": "W4A16", "int8": "INT8_W8A8"}


def quantize_compressed(model: Any, info: dict[str, Any], dtype: Any) -> tuple[Any, str]:
    """``model`` written as a compressed-tensors checkpoint and loaded back through
    transformers' quantizer; returns the model and the checkpoint's format."""
    from compressed_tensors.compressors import ModelCompressor
    from compressed_tensors.quantization import apply_quantization_config

    scheme = _scheme(model, info)
    config = model.config
    if hasattr(config, "quantization_config"):
        del config.quantization_config
    apply_quantization_config(model, scheme)
    _weight_qparams(model)
    compressor = ModelCompressor.from_pretrained_model(model, quantization_format=None)
    if compressor is None or compressor.quantization_config is None:
        raise ValueError("compressed-tensors quantized no layer of the tiny build")
    fmt = getattr(compressor.quantization_config.format, "value", compressor.quantization_config.format)
    with tempfile.TemporaryDirectory(prefix="sweeper-quantize-") as folder:
        compressor.compress_model(model)
        model.save_pretrained(folder, safe_serialization=True)
        compressor.update_config(folder)
        loaded = type(model).from_pretrained(folder, device_map="cpu", dtype=dtype)
    _decompress(loaded)
    return loaded.eval(), str(fmt)


def _decompress(model: Any) -> None:
    """Decompress the weights now, as compressed-tensors does on a model's first forward:
    the CPU reference and the device then run the same layers (the float8 weights'
    scales applied once on the CPU at load; each forward quantizes its activations)."""
    from compressed_tensors.offload import remove_dispatch

    quantizer = getattr(model, "hf_quantizer", None)
    compressor = getattr(quantizer, "compressor", None)
    if compressor is not None:
        compressor.decompress_model(model)
    # Decompressing puts the model under compressed-tensors' offloading, whose hooks run
    # every forward where the weights were loaded (the CPU) whatever device the model is
    # moved to: a plain module again, it runs where it is sent.
    remove_dispatch(model, onload_tensors=True)


def _scheme(model: Any, info: dict[str, Any]) -> Any:
    """The repo's quantization_config when the config has it, else the id's preset, both
    leaving the output head float as the repos do."""
    from compressed_tensors.quantization import QuantizationConfig, QuantizationStatus, preset_name_to_scheme

    own = getattr(model.config, "quantization_config", None)
    own = own.to_dict() if hasattr(own, "to_dict") else own
    if isinstance(own, dict) and own.get("config_groups"):
        groups = own["config_groups"]
        ignore = list(own.get("ignore") or ["lm_head"])
    else:
        preset = PRESETS.get(str(info.get("format")), "FP8_DYNAMIC")
        groups = {"group_0": preset_name_to_scheme(preset, ["Linear"])}
        ignore = ["lm_head"]
    config = QuantizationConfig(config_groups=groups, ignore=ignore, quantization_status=QuantizationStatus.FROZEN)
    _fit_groups(model, config)
    return config


def _fit_groups(model: Any, config: Any) -> None:
    """A group size the tiny build's layers divide (the repo's is for wider layers)."""
    import torch

    from sweeper.libraries.transformers.quantize_packed import GROUP_SIZES

    widths = {m.in_features for m in model.modules() if isinstance(m, torch.nn.Linear)}
    for scheme in config.config_groups.values():
        weights = getattr(scheme, "weights", None)
        size = getattr(weights, "group_size", None)
        if not size or size <= 0 or all(w % size == 0 for w in widths):
            continue
        weights.group_size = next((g for g in GROUP_SIZES if all(w % g == 0 for w in widths)), size)


def _weight_qparams(model: Any) -> None:
    """Each quantized layer's weight scale (and zero point) from its min and max, per the
    scheme's strategy (tensor, channel or group)."""
    import torch
    from compressed_tensors.quantization.utils import calculate_qparams

    for module in model.modules():
        scheme = getattr(module, "quantization_scheme", None)
        if scheme is None or scheme.weights is None or not hasattr(module, "weight_scale"):
            continue
        args, weight = scheme.weights, module.weight.detach()
        strategy = str(getattr(args.strategy, "value", args.strategy))
        if strategy == "tensor":
            low, high = weight.amin().reshape(1), weight.amax().reshape(1)
        elif strategy == "group":
            grouped = weight.reshape(weight.shape[0], -1, int(args.group_size))
            low, high = grouped.amin(-1), grouped.amax(-1)
        else:  # channel
            low, high = weight.amin(1, keepdim=True), weight.amax(1, keepdim=True)
        scale, zero = calculate_qparams(torch.minimum(low, torch.zeros_like(low)),
                                        torch.maximum(high, torch.zeros_like(high)), args)
        module.weight_scale.data.copy_(scale.reshape(module.weight_scale.shape).to(module.weight_scale.dtype))
        if hasattr(module, "weight_zero_point"):
            module.weight_zero_point.data.copy_(zero.reshape(module.weight_zero_point.shape)
                                                .to(module.weight_zero_point.dtype))
