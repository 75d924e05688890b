"""diffusers: a repo is a pipeline of several models, each checked.

Which components a repo has comes from its ``model_index.json`` (the ref's ``config``,
when the source carries it), else from a table of id patterns (``index``); the
record's notes say which (``components_source``) and list the components. Each component
(denoiser, VAE, ControlNet, and the text and image encoders, transformers models) is
built tiny with its own inputs and checked on its own through every stage
(``Built.components``), so the repo passes only when every component passes every stage.
A component's loss is the sum of its outputs' mean squares (the L2 shape of the
denoising objective; every output counts: a ControlNet returns one residual per block).
"""

from __future__ import annotations

import functools
import inspect
from typing import Any

from sweeper.libraries.base import Library, count_parameters
from sweeper.libraries.built import Built
from sweeper.libraries.diffusers import encoders, index, parts, sampling, video
from sweeper.libraries.diffusers.quantize import check_applicable, quantize_denoiser
from sweeper.libraries.quantization import detect
from sweeper.records import ModelRef
from sweeper.settings.errors import ConfigError

# model_index.json class name -> builder of (model, inputs).
BUILDERS = {**parts.BUILDERS, **video.BUILDERS, **encoders.BUILDERS}
Spec = index.Spec
NAME_TABLE = index.NAME_TABLE
# Where LoRA goes on a denoiser (diffusers' own attention projections, as its LoRA loaders target).
LORA_TARGETS = ["to_q", "to_k", "to_v", "to_out.0"]


class Diffusers(Library):
    """diffusers pipelines: every denoiser, VAE, ControlNet and encoder component, tiny."""

    name = "diffusers"
    hub_names = frozenset({"diffusers"})
    packages = ("diffusers",)
    quantizes = True  # a bitsandbytes denoiser (quantize.py)

    def architecture(self, ref: ModelRef) -> str | None:
        """The components, as ``name=Class`` pairs, or None when neither the ref's
        model_index.json nor the id says."""
        found = components(ref)
        return None if found is None else _listing(found[0])

    def same_build(self, ref: ModelRef) -> Any:
        """The components and where they came from: repos the name table maps to the same
        components (an SD 1.5 fine-tune and its base) build the same tiny pipeline."""
        found = index.components(ref.model_id, ref.config, frozenset(BUILDERS))
        if isinstance(found, str):  # the same config error, each copy naming its own repo
            return {"not_known": found}
        return {"components": found[0], "components_source": found[1]}

    def build(self, ref: ModelRef, cfg: Any) -> Built:
        """Every component, tiny (random and pretrained weights are not built here yet)."""
        self.require()
        import torch

        if cfg.materialise.weights != "tiny":
            raise ConfigError(f"diffusers pipelines are built with tiny weights only (asked: {cfg.materialise.weights})")
        found = index.components(ref.model_id, ref.config, frozenset(BUILDERS))
        if isinstance(found, str):
            raise ConfigError(f"{ref.model_id}: {found}")
        spec, source = found
        quantization = detect(ref)
        if quantization is not None:
            check_applicable(quantization)  # before a pipeline is built for nothing
        dtype = getattr(torch, cfg.device.dtype)
        built = {name: _component(cls, dict(kwargs), cfg.materialise.seed, dtype) for name, (cls, kwargs) in spec.items()}
        if quantization is not None:
            quantization = quantize_denoiser(built, quantization, dtype, LORA_TARGETS)
        whole = torch.nn.ModuleDict({name: part.model for name, part in built.items()})
        notes = {"weights": "tiny", "components": _listing(spec), "components_source": source,
                 "component_parameters": ",".join(f"{k}={p.num_parameters}" for k, p in built.items())}
        return Built(model=whole, inputs={}, architecture="+".join(p.architecture for p in built.values()),
                     model_type="diffusers", num_parameters=count_parameters(whole), has_labels=True, notes=notes,
                     components=built, quantization=quantization or {},
                     sample=None if quantization else sampling.entry(spec, built))


def components(ref: ModelRef) -> tuple[Spec, str] | None:
    """(components, where they came from) for ``ref``, or None when not known offline."""
    found = index.components(ref.model_id, ref.config, frozenset(BUILDERS))
    return None if isinstance(found, str) else found


def _listing(spec: Spec) -> str:
    return ",".join(f"{k}={cls}{'+LoRA' if kw.get('lora') else ''}" for k, (cls, kw) in spec.items())


def _component(cls: str, kwargs: dict[str, Any], seed: int, dtype: Any) -> Built:
    """One component built tiny, in ``dtype``, wrapped so its output carries its loss.
    Seeded on its own: its weights and inputs depend on its class and arguments, not on
    the components built before it, so the same VAE or text encoder in two pipelines is
    the same build (and one check: ``checks.part_memo``)."""
    import torch

    torch.manual_seed(seed)
    gen = torch.Generator().manual_seed(seed)
    lora = kwargs.pop("lora", False)
    model, inputs = BUILDERS[cls](gen, **kwargs)
    architecture = cls
    if lora:
        model = _with_lora(model, cls)
        architecture = f"{cls}+LoRA"
    wrapped = _component_class()(model).to(dtype).eval()
    return Built(model=wrapped, inputs={k: _cast(v, dtype) for k, v in inputs.items()}, architecture=architecture,
                 model_type="diffusers", num_parameters=count_parameters(model), has_labels=True)


def _with_lora(model: Any, cls: str) -> Any:
    """``model`` with a rank-4 LoRA adapter on its attention projections (peft, through
    diffusers' own ``add_adapter``), as a LoRA repo's weights load onto its base."""
    from sweeper.libraries.base import MissingDependencyError, _importable

    if not _importable("peft"):
        raise MissingDependencyError(f"a LoRA on {cls} needs peft (not installed)", op="peft")
    from peft import LoraConfig

    from sweeper.libraries.transformers.quantize_packed import before_lora

    before_lora()
    # init_lora_weights=False: a zero-initialised B would make the adapter's output (and
    # the A gradients) zero, so the device would be compared on nothing of the adapter.
    model.add_adapter(LoraConfig(r=4, lora_alpha=4, target_modules=LORA_TARGETS, init_lora_weights=False))
    return model


def _cast(value: Any, dtype: Any) -> Any:
    if isinstance(value, dict):
        return {k: _cast(v, dtype) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(_cast(v, dtype) for v in value)
    return value.to(dtype) if getattr(value, "is_floating_point", lambda: False)() else value


@functools.cache
def _component_class() -> type:
    import torch
    from transformers.utils import ModelOutput

    from sweeper.libraries.outputs import float_tensors

    class DiffusersComponent(torch.nn.Module):
        """One component; its output is the first float it returns, its loss the sum of
        every float output's mean square."""

        def __init__(self, model: Any) -> None:
            super().__init__()
            self.model = model
            self._tuple = {"return_dict": False} if "return_dict" in inspect.signature(model.forward).parameters else {}

        def forward(self, **inputs: Any) -> Any:
            found = list(float_tensors(self.model(**inputs, **self._tuple)))
            loss = sum((out.float().pow(2).mean() for out in found[1:]), found[0].float().pow(2).mean())
            return ModelOutput(output=found[0], loss=loss)

    return DiffusersComponent
