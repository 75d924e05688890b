"""diffusers: a repo is a pipeline of several models, each checked.

Which components a repo has comes from its ``model_index.json`` (the ref's ``config``,
when the source carries it), else from a table of id patterns; the record's notes say
which (``components_source``) and list the components. The components run as one module
(each on its own inputs, in turn), so the repo passes only when every component passes
every stage; the loss is the sum of each component's mean squared output (the L2 shape of
the denoising objective). Text encoders are transformers models, checked as such.
"""

from __future__ import annotations

import re
from typing import Any

from sweeper.libraries import diffusers_parts
from sweeper.libraries.base import Library, count_parameters
from sweeper.libraries.built import Built
from sweeper.records import ModelRef
from sweeper.settings.errors import ConfigError

Spec = dict[str, tuple[str, dict[str, Any]]]  # component name -> (class, builder arguments)
_VAE16 = ("AutoencoderKL", {"latent_channels": 16})
# Id patterns -> components, first match wins; None: the id does not say (an adapter, a
# video or 3D model, a pipeline of classes not built here): model_index.json is needed.
NAME_TABLE: tuple[tuple[str, Spec | None], ...] = (
    (r"lora|ip-adapter|animatediff|hyper-sd|redux|zero123|hunyuan|depthcrafter|marigold|wan2|ltx|video|vton", None),
    (r"controlnet", {"controlnet": ("ControlNetModel", {})}),
    (r"novae", {"unet": ("UNet2DConditionModel", {})}),
    (r"vae", {"vae": ("AutoencoderKL", {})}),
    (r"flux.*schnell", {"transformer": ("FluxTransformer2DModel", {"guidance": False}), "vae": _VAE16}),
    (r"flux", {"transformer": ("FluxTransformer2DModel", {}), "vae": _VAE16}),
    (r"stable-diffusion-3|sd3", {"transformer": ("SD3Transformer2DModel", {}), "vae": _VAE16}),
    (r"xl.*inpaint", {"unet": ("UNet2DConditionModel", {"sdxl": True, "in_channels": 9}), "vae": ("AutoencoderKL", {})}),
    (r"xl|playground", {"unet": ("UNet2DConditionModel", {"sdxl": True}), "vae": ("AutoencoderKL", {})}),
    (r"inpaint", {"unet": ("UNet2DConditionModel", {"in_channels": 9}), "vae": ("AutoencoderKL", {})}),
    (r"stable-diffusion|sd-turbo|dreamshaper|realistic|lcm|latent-consistency",
     {"unet": ("UNet2DConditionModel", {}), "vae": ("AutoencoderKL", {})}),
)


class Diffusers(Library):
    """diffusers pipelines: every denoiser, VAE and ControlNet component, tiny."""

    name = "diffusers"
    hub_names = frozenset({"diffusers"})
    packages = ("diffusers",)

    def architecture(self, ref: ModelRef) -> str | None:
        """The components, as ``name=Class`` pairs, or None when neither the ref's
        model_index.json nor the id says."""
        found = components(ref)
        return None if found is None else ",".join(f"{k}={v[0]}" for k, v in found[0].items())

    def build(self, ref: ModelRef, cfg: Any) -> Built:
        """Every component, tiny (random and pretrained weights are not built here yet)."""
        self.require()
        import torch

        if cfg.materialise.weights != "tiny":
            raise ConfigError(f"diffusers pipelines are built with tiny weights only (asked: {cfg.materialise.weights})")
        found = components(ref)
        if found is None:
            raise ConfigError(f"{ref.model_id}: which diffusers components this repo has is not known offline "
                              "(its model_index.json is needed; the id matches no pattern of the name table)")
        spec, source = found
        torch.manual_seed(cfg.materialise.seed)
        gen = torch.Generator().manual_seed(cfg.materialise.seed)
        parts, inputs = {}, {}
        for name, (cls, kwargs) in spec.items():
            model, part_inputs = diffusers_parts.BUILDERS[cls](gen, **kwargs)
            parts[name] = model
            inputs.update({f"{name}__{k}": v for k, v in part_inputs.items()})
        dtype = getattr(torch, cfg.device.dtype)
        pipeline = _pipeline_class()(parts).to(dtype).eval()
        inputs = {k: _cast(v, dtype) for k, v in inputs.items()}
        notes = {"weights": "tiny", "components": ",".join(f"{k}={v[0]}" for k, v in spec.items()),
                 "components_source": source,
                 "component_parameters": ",".join(f"{k}={count_parameters(m)}" for k, m in parts.items())}
        return Built(model=pipeline, inputs=inputs, architecture="+".join(v[0] for v in spec.values()),
                     model_type="diffusers", num_parameters=count_parameters(pipeline), has_labels=True, notes=notes)


def components(ref: ModelRef) -> tuple[Spec, str] | None:
    """(components, where they came from) for ``ref``, or None."""
    index = ref.config or {}
    if isinstance(index, dict) and "_class_name" in index:
        pipeline = str(index["_class_name"])
        spec: Spec = {}
        for name, value in index.items():
            if isinstance(value, (list, tuple)) and len(value) == 2 and value[1] in diffusers_parts.BUILDERS:
                spec[name] = (value[1], _index_kwargs(value[1], pipeline, ref.model_id))
        return (spec, "model_index.json") if spec else None
    name = ref.model_id.lower()
    for pattern, found in NAME_TABLE:
        if re.search(pattern, name):
            return (dict(found), "name table") if found is not None else None
    return None


def _index_kwargs(cls: str, pipeline: str, model_id: str) -> dict[str, Any]:
    """Builder arguments a model_index.json implies (SDXL, inpainting, Flux's VAE)."""
    if cls == "UNet2DConditionModel":
        return {"sdxl": "XL" in pipeline, "in_channels": 9 if "Inpaint" in pipeline else 4}
    if cls == "AutoencoderKL" and ("Flux" in pipeline or "StableDiffusion3" in pipeline):
        return {"latent_channels": 16}
    if cls == "FluxTransformer2DModel":
        return {"guidance": "schnell" not in model_id.lower()}
    return {}


def _cast(value: Any, dtype: Any) -> Any:
    if isinstance(value, dict):
        return {k: _cast(v, dtype) for k, v in value.items()}
    return value.to(dtype) if getattr(value, "is_floating_point", lambda: False)() else value


def _pipeline_class() -> type:
    import torch
    from transformers.utils import ModelOutput

    from sweeper.checks.reference import float_tensors

    class DiffusersComponents(torch.nn.Module):
        """The pipeline's components; forward runs each on its own (prefixed) inputs."""

        def __init__(self, parts: dict[str, Any]) -> None:
            super().__init__()
            self.parts = torch.nn.ModuleDict(parts)

        def forward(self, **inputs: Any) -> Any:
            outputs, loss = {}, None
            for name, part in self.parts.items():
                mine = {k.split("__", 1)[1]: v for k, v in inputs.items() if k.startswith(f"{name}__")}
                # Every float output counts (a ControlNet returns one residual per block).
                found = list(float_tensors(part(**mine, return_dict=False)))
                outputs[name] = found[0]
                for out in found:
                    term = out.float().pow(2).mean()
                    loss = term if loss is None else loss + term
            return ModelOutput(**outputs, loss=loss)

    return DiffusersComponents
