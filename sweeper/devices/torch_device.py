"""Devices torch knows natively or through a vendor plugin (cpu, cuda, mps, xpu, ...)."""

from __future__ import annotations

import importlib
from typing import Any

from sweeper.devices.base import Device
from sweeper.devices.precision import MATMUL_PRECISION, Float32Math


class TorchDevice(Device):
    """A device reached through ``torch.<name>`` with the usual memory API."""

    name = "cpu"
    #: module a vendor plugin needs imported before the device string works
    plugin_module: str | None = None

    def __init__(self, spec: str, **options: Any) -> None:
        super().__init__(spec, **options)

    def _module(self) -> Any:
        import torch

        return getattr(torch, self.name, None)

    def available(self) -> tuple[bool, str]:
        if self.plugin_module:
            try:
                importlib.import_module(self.plugin_module)
            except ImportError as exc:
                return False, f"needs {self.plugin_module} ({exc})"
        mod = self._module()
        if mod is None or not hasattr(mod, "is_available"):
            return False, f"torch has no {self.name} support"
        if not mod.is_available():
            return False, f"no {self.name} device visible to torch"
        return True, ""

    def setup(self) -> None:
        if self.plugin_module:
            importlib.import_module(self.plugin_module)

    def synchronize(self) -> None:
        mod = self._module()
        if mod is not None and hasattr(mod, "synchronize"):
            mod.synchronize()

    def reset_peak_memory(self) -> None:
        mod = self._module()
        if mod is not None and hasattr(mod, "reset_peak_memory_stats"):
            mod.reset_peak_memory_stats()

    def peak_memory_bytes(self) -> int | None:
        mod = self._module()
        if mod is not None and hasattr(mod, "max_memory_allocated"):
            return int(mod.max_memory_allocated())
        return None

    def reset_between_models(self) -> None:
        mod = self._module()
        if mod is not None and hasattr(mod, "empty_cache"):
            mod.empty_cache()


class CpuDevice(TorchDevice):
    name = "cpu"
    description = "the host CPU (reference device; always available)"
    needs = "nothing"

    def available(self) -> tuple[bool, str]:
        return True, ""

    def peak_memory_bytes(self) -> int | None:
        # Peak RSS of this process: the closest CPU analogue of device peak memory.
        import resource
        import sys

        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        return int(peak if sys.platform == "darwin" else peak * 1024)


def _torch_device(name: str, description: str, needs: str, plugin: str | None = None, *, gpus: bool = False) -> type[TorchDevice]:
    """A ``TorchDevice`` subclass for ``torch.<name>`` (named in ``devices.base.BUILTIN``)."""
    attrs = {"name": name, "description": description, "needs": needs, "plugin_module": plugin, "gpus": gpus}
    return type(f"{name.capitalize()}Device", (TorchDevice,), {"__module__": __name__, **attrs})


class CudaDevice(TorchDevice):
    """NVIDIA (or ROCm) GPUs. Its float32 math is read from the live settings: cuDNN runs
    float32 convolutions in TF32 unless ``torch.backends.cudnn.allow_tf32`` is off, and
    matmuls follow ``torch.get_float32_matmul_precision()`` (or the older
    ``torch.backends.cuda.matmul.allow_tf32``). ``strict_float32`` turns both off."""

    name = "cuda"
    description = "NVIDIA (or ROCm) GPUs through torch.cuda"
    needs = "a CUDA/ROCm build of torch and a GPU"
    gpus = True

    def setup(self) -> None:
        super().setup()
        if self.options.get("strict_float32"):
            import torch

            torch.backends.cudnn.allow_tf32 = False
            torch.backends.cuda.matmul.allow_tf32 = False
            torch.set_float32_matmul_precision("highest")

    def float32_math(self) -> Float32Math:
        import torch

        matmul = MATMUL_PRECISION.get(torch.get_float32_matmul_precision(), "ieee")
        if matmul == "ieee" and torch.backends.cuda.matmul.allow_tf32:
            matmul = "tf32"
        conv = "tf32" if torch.backends.cudnn.allow_tf32 else "ieee"
        strict = bool(self.options.get("strict_float32"))
        source = "--strict-float32" if strict else \
            "live settings (torch.backends.cudnn.allow_tf32, torch.get_float32_matmul_precision())"
        return Float32Math(matmul=matmul, conv=conv, source=source, strict=strict)


MpsDevice = _torch_device("mps", "Apple GPUs through Metal", "macOS on Apple silicon")
XpuDevice = _torch_device("xpu", "Intel GPUs through torch.xpu", "an XPU build of torch and an Intel GPU")
HpuDevice = _torch_device("hpu", "Intel Gaudi through habana_frameworks", "habana_frameworks.torch", "habana_frameworks.torch")
NeuronDevice = _torch_device("neuron", "AWS Trainium/Inferentia through the native PyTorch backend", "torch_neuronx", "torch_neuronx")
XlaDevice = _torch_device("xla", "TPUs and other XLA devices through torch_xla", "torch_xla", "torch_xla")
