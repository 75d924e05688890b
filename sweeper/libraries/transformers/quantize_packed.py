"""GPTQ and AWQ checkpoints of a tiny build: packed 4-/8-bit weights that load through
transformers' quantizer into gptqmodel's layers.

A GPTQ or AWQ repo is pre-quantized: its loader reads packed integer weights (``qweight``,
``qzeros``, ``scales``) into the kernel package's layers. The tiny build is written in that
format and loaded back the same way, so the layers and kernels are the ones a user of the
repo gets. The values are rounded to nearest per group (no calibration): GPTQ's and AWQ's
calibration choose other integers for the same format and kernels, which is not what a
device is judged on.

The kernel is gptqmodel's portable torch one (``TorchLinear`` for GPTQ, ``AwqTorchLinear``
for AWQ: unpack with shifts and masks, dequantise, ``mm``), the one it has for a device
without a kernel of its own. Its automatic choice on a CPU is ``aten::_weight_int4pack_mm_for_cpu``,
a CPU-only op that a new device would never be handed.

Which layers are packed is the quantizer's choice (transformers and optimum leave some float:
the output head, layers outside the repeated blocks): a first load of the float weights
under the method's config names them, a second loads the packed checkpoint.
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any

from sweeper.libraries import dynamo_settings

# transformers' backend names for gptqmodel's portable torch kernels.
TORCH_BACKEND = {"gptq": "torch", "awq": "torch_awq"}
GROUP_SIZES = (128, 64, 32, 16)


def quantize_packed(model: Any, info: dict[str, Any], dtype: Any) -> tuple[Any, str]:
    """``model`` written as a ``info['method']`` (gptq or awq) checkpoint and loaded back
    through transformers' quantizer; returns the model and the kernel's class name."""
    import_gptqmodel()
    method = info["method"]
    bits = 4 if method == "awq" else int(info.get("bits") or 4)
    group = _group_size(model, info.get("group_size"))
    keep = _unpackable(model) if method == "awq" else []
    with tempfile.TemporaryDirectory(prefix="sweeper-quantize-") as folder:
        _save_float(model, folder, method, bits, group, keep)
        names = _quantized_layer_names(type(model), folder, _method_config(method, bits, group, keep), dtype)
        state = _packed_state(model, names, method, bits, group)
        from safetensors.torch import save_file

        save_file(state, str(Path(folder) / "model.safetensors"), metadata={"format": "pt"})
        loaded = type(model).from_pretrained(folder, quantization_config=_method_config(method, bits, group, keep),
                                             device_map="cpu", dtype=dtype)
    kernels = {type(m).__name__ for m in loaded.modules() if _is_quant_linear(m)}
    return loaded.eval(), ", ".join(sorted(kernels))


def import_gptqmodel() -> None:
    """Import gptqmodel without the Hub and with this process's environment as it was.

    gptqmodel imports bitsandbytes (imported here with the ``kernels`` package hidden, so no
    kernel is fetched from the Hub) and sets allocator and device-order variables for the
    whole process on import; a sweep's worker keeps its own. The import also raises Dynamo's
    recompile limit: every GPTQ or AWQ model runs under it, as a user's does once gptqmodel is
    imported, and every other model's check starts without it (``dynamo_settings``).
    """
    import sys

    if "gptqmodel" not in sys.modules:
        from sweeper.libraries.quantization import import_without_hub_kernels

        import_without_hub_kernels()
        saved = dict(os.environ)
        try:
            _GPTQMODEL_DYNAMO.update(dynamo_settings.changes_by(_import_gptqmodel))
        finally:
            os.environ.clear()
            os.environ.update(saved)
    dynamo_settings.apply(_GPTQMODEL_DYNAMO)


# The Dynamo settings gptqmodel's import changed in this process.
_GPTQMODEL_DYNAMO: dict[str, Any] = {}


def before_lora() -> None:
    """Call before a LoRA adapter is made with peft. peft's LoRA dispatch imports gptqmodel
    whenever it is installed (to recognise its layers), so a peft user's process runs under
    what that import sets: every LoRA check gets those settings here, not only the first
    one a worker meets (and every other model's check still starts without them)."""
    import importlib.util

    if importlib.util.find_spec("gptqmodel") is not None:
        import_gptqmodel()


def _import_gptqmodel() -> None:
    import gptqmodel  # noqa: F401


def _group_size(model: Any, wanted: Any) -> int:
    """The repo's group size where it divides every linear layer's inputs, else the largest
    that does (a tiny build is narrower than the repo's), else -1 (one group per row)."""
    import torch

    widths = {m.in_features for m in model.modules() if isinstance(m, torch.nn.Linear)}
    for size in ((int(wanted),) if isinstance(wanted, int) and wanted > 0 else ()) + GROUP_SIZES:
        if widths and all(w % size == 0 for w in widths):
            return size
    return -1


def _unpackable(model: Any) -> list[str]:
    """Linear layers whose widths the packed format cannot hold (32 bits of 4-bit values per
    word: both widths a multiple of 32), which AWQ repos leave float (``modules_to_not_convert``)."""
    import torch

    return [name for name, m in model.named_modules()
            if isinstance(m, torch.nn.Linear) and (m.in_features % 32 or m.out_features % 32)]


def _method_config(method: str, bits: int, group: int, keep: list[str] | None = None) -> Any:
    from transformers import AwqConfig, GPTQConfig

    if method == "awq":
        return AwqConfig(bits=bits, group_size=group, zero_point=True, version="gemm", backend=TORCH_BACKEND[method],
                         modules_to_not_convert=list(keep or []) or None)
    return GPTQConfig(bits=bits, group_size=group, sym=True, desc_act=False, backend=TORCH_BACKEND[method])


def _checkpoint_config(method: str, bits: int, group: int, keep: list[str]) -> dict[str, Any]:
    """The ``quantization_config`` a repo of this method ships (GPTQ in gptqmodel's v2
    layout, whose zero points are stored as they are; the v1 layout's differ by one and are
    converted to v2 on load, so the layers are the same)."""
    if method == "awq":
        return {"quant_method": "awq", "bits": bits, "group_size": group, "zero_point": True, "version": "gemm",
                "modules_to_not_convert": keep or None}
    return {"quant_method": "gptq", "bits": bits, "group_size": group, "sym": True, "desc_act": False,
            "checkpoint_format": "gptq_v2"}


def _save_float(model: Any, folder: str, method: str, bits: int, group: int, keep: list[str]) -> None:
    """The float weights with the method's config: what the first load reads."""
    config = model.config
    if hasattr(config, "quantization_config"):
        del config.quantization_config  # the repo's own describes weights this tiny save does not hold
    model.save_pretrained(folder, safe_serialization=True)
    path = Path(folder) / "config.json"
    saved = json.loads(path.read_text())
    saved["quantization_config"] = _checkpoint_config(method, bits, group, keep)
    path.write_text(json.dumps(saved))


def _quantized_layer_names(cls: Any, folder: str, method_config: Any, dtype: Any) -> list[str]:
    """The layers the method's quantizer replaces, from a load of the float weights (whose
    packed tensors it reports missing; nothing of that load is kept)."""
    import transformers

    verbosity = transformers.logging.get_verbosity()
    transformers.logging.set_verbosity_error()  # the missing packed weights are expected here
    try:
        skeleton = cls.from_pretrained(folder, quantization_config=method_config, device_map="cpu", dtype=dtype)
    finally:
        transformers.logging.set_verbosity(verbosity)
    return [name for name, module in skeleton.named_modules() if _is_quant_linear(module)]


def _is_quant_linear(module: Any) -> bool:
    from gptqmodel.nn_modules.qlinear import BaseQuantLinear

    return isinstance(module, BaseQuantLinear)


def _packed_state(model: Any, names: list[str], method: str, bits: int, group: int) -> dict[str, Any]:
    """The checkpoint: ``names`` packed, every other tensor as the float model holds it."""
    state: dict[str, Any] = {}
    modules = dict(model.named_modules())
    for name in names:
        state.update(_pack(modules[name], name, method, bits, group))
    for key, tensor in model.state_dict().items():
        owner = key.rsplit(".", 1)[0]
        if owner not in names and key not in state:
            state[key] = tensor.detach().contiguous()
    # Tied weights are saved once, as save_pretrained does.
    for tied in getattr(model, "_tied_weights_keys", None) or ():
        if isinstance(tied, str) and tied in state and getattr(model.config, "tie_word_embeddings", False):
            state.pop(tied)
    return state


def _pack(linear: Any, name: str, method: str, bits: int, group: int) -> dict[str, Any]:
    """One layer rounded to nearest per group and packed by the method's torch kernel."""
    import torch

    weight = linear.weight.detach().float()
    out_features, in_features = weight.shape
    size = in_features if group == -1 else group
    grouped = weight.reshape(out_features, in_features // size, size)
    top = 2**bits - 1
    if method == "awq":  # asymmetric: a zero point per group
        low, high = grouped.amin(-1), grouped.amax(-1)
        scales = ((high - low).clamp(min=1e-8) / top).half().float()
        zeros = torch.round(-low / scales).clamp(0, top)
    else:  # GPTQ symmetric: the zero point is the middle of the range
        scales = (grouped.abs().amax(-1).clamp(min=1e-8) / (top / 2)).half().float()
        zeros = torch.full_like(scales, float(2 ** (bits - 1)))
    levels = torch.clamp(torch.round(grouped / scales[..., None]) + zeros[..., None], 0, top)
    # The kernel's packing rounds (w + zero * scale) / scale again: it is handed the values
    # the integers stand for, so it finds those integers exactly (no 4-bit overflow).
    exact = torch.nn.Linear(in_features, out_features, bias=linear.bias is not None)
    exact.weight.data = ((levels - zeros[..., None]) * scales[..., None]).reshape(out_features, in_features)
    if linear.bias is not None:
        exact.bias.data = linear.bias.detach().float()
    layer = _kernel(method)(bits=bits, group_size=group, sym=method != "awq", desc_act=False, in_features=in_features,
                            out_features=out_features, bias=linear.bias is not None, register_buffers=True)
    if method == "awq":
        layer.pack(exact, scales, zeros, None)
        keys = ("qweight", "qzeros", "scales")
    else:
        layer.pack_original(exact, scales, zeros, torch.arange(in_features, dtype=torch.int32) // size)
        keys = ("qweight", "qzeros", "scales", "g_idx")
    packed = {f"{name}.{key}": getattr(layer, key).detach().contiguous() for key in keys}
    if linear.bias is not None:
        packed[f"{name}.bias"] = linear.bias.detach().contiguous()
    return packed


def _kernel(method: str) -> Any:
    if method == "awq":
        from gptqmodel.nn_modules.qlinear.torch_awq import AwqTorchLinear

        return AwqTorchLinear
    from gptqmodel.nn_modules.qlinear.torch import TorchLinear

    return TorchLinear
