"""Which components a diffusers repo has, offline: its ``model_index.json`` (the ref's
``config``, when the source carries it), else a table of id patterns.

A component is (class, builder arguments); ``lora`` among the arguments puts a LoRA
adapter (peft) on the built denoiser: a LoRA repo is its base family's denoiser with the
adapter. A row of the table that maps to a string says why the id is not enough: the
record names exactly what is missing.
"""

from __future__ import annotations

import re
from typing import Any

Spec = dict[str, tuple[str, dict[str, Any]]]  # component name -> (class, builder arguments)

_CLIP = ("CLIPTextModel", {})
_CLIP2 = ("CLIPTextModelWithProjection", {})
_T5 = ("T5EncoderModel", {})
_VAE = ("AutoencoderKL", {})
_VAE16 = ("AutoencoderKL", {"latent_channels": 16})
_SD: Spec = {"unet": ("UNet2DConditionModel", {}), "vae": _VAE, "text_encoder": _CLIP}
_SDXL: Spec = {"unet": ("UNet2DConditionModel", {"sdxl": True}), "vae": _VAE, "text_encoder": _CLIP, "text_encoder_2": _CLIP2}
_FLUX: Spec = {"transformer": ("FluxTransformer2DModel", {}), "vae": _VAE16, "text_encoder": _CLIP, "text_encoder_2": _T5}
_SVD: Spec = {"unet": ("UNetSpatioTemporalConditionModel", {}), "vae": ("AutoencoderKLTemporalDecoder", {}),
              "image_encoder": ("CLIPVisionModelWithProjection", {})}
_WAN: Spec = {"transformer": ("WanTransformer3DModel", {}), "vae": ("AutoencoderKLWan", {}),
              "text_encoder": ("UMT5EncoderModel", {})}


def _with(spec: Spec, **changes: tuple[str, dict[str, Any]]) -> Spec:
    return {**spec, **changes}


# Id patterns (lower case) -> components, first match wins.
NAME_TABLE: tuple[tuple[str, Spec | str], ...] = (
    (r"hyper-sd", "a repo of LoRAs for several bases (SD 1.5, SDXL, SD3, FLUX): which base a row means is not in its id"),
    (r"flux.*lora|lora.*flux", {"transformer": ("FluxTransformer2DModel", {"lora": True})}),
    (r"lcm-lora-sdxl|xl.*lora|lora.*xl", {"unet": ("UNet2DConditionModel", {"sdxl": True, "lora": True})}),
    (r"lcm-lora-sdv1-5|lora.*sd-?v?1|sd-?v?1.*lora", {"unet": ("UNet2DConditionModel", {"lora": True})}),
    (r"lora", "a LoRA adapter whose base family its id does not name (adapter_config.json or the card needed)"),
    (r"ip-adapter", "IP-Adapter weights (image-prompt projection and attention processors for an SD UNet), not a "
                    "model of their own: diffusers builds them only onto a base pipeline named elsewhere"),
    (r"hunyuan3d", "Hunyuan3D's shape and texture models are hy3dgen's own classes, not diffusers components"),
    (r"vton", "IDM-VTON's UNets are the repo's own classes (remote code), not diffusers components"),
    (r"animatediff", "AnimateDiff motion-adapter checkpoints: UNetMotionModel (an SD 1.5 UNet with a MotionAdapter) "
                     "is not built here yet"),
    (r"redux", {"image_embedder": ("ReduxImageEncoder", {}), "image_encoder": ("SiglipVisionModel", {})}),
    # DepthCrafter's repo is its UNet alone (the pipeline takes SVD's VAE and image encoder).
    (r"depthcrafter", {"unet": ("UNetSpatioTemporalConditionModel", {})}),
    (r"stable-video-diffusion|img2vid", _SVD),
    (r"wan2\.?\d?.*i2v", _with(_WAN, transformer=("WanTransformer3DModel", {"image": True}),
                               image_encoder=("CLIPVisionModel", {}))),
    (r"wan2", _WAN),
    (r"ltx-?video", {"transformer": ("LTXVideoTransformer3DModel", {}), "vae": ("AutoencoderKLLTXVideo", {}),
                     "text_encoder": _T5}),
    (r"hunyuandit", {"transformer": ("HunyuanDiT2DModel", {}), "vae": _VAE, "text_encoder": ("BertModel", {}),
                     "text_encoder_2": _T5}),
    # Marigold: an SD 2 UNet that takes the image latents beside the noisy ones (8 channels).
    (r"marigold", _with(_SD, unet=("UNet2DConditionModel", {"in_channels": 8}))),
    # zero123: the same 8-channel UNet, conditioned on a CLIP image embedding (its small
    # cc_projection is the community pipeline's own layer, not built here).
    (r"zero123", {"unet": ("UNet2DConditionModel", {"in_channels": 8}), "vae": _VAE,
                  "image_encoder": ("CLIPVisionModelWithProjection", {})}),
    (r"controlnet", {"controlnet": ("ControlNetModel", {})}),
    (r"novae", {"unet": ("UNet2DConditionModel", {}), "text_encoder": _CLIP}),
    (r"vae", {"vae": _VAE}),
    (r"flux.*schnell", _with(_FLUX, transformer=("FluxTransformer2DModel", {"guidance": False}))),
    (r"flux", _FLUX),
    (r"stable-diffusion-3|sd3", {"transformer": ("SD3Transformer2DModel", {}), "vae": _VAE16, "text_encoder": _CLIP,
                                 "text_encoder_2": _CLIP2, "text_encoder_3": _T5}),
    (r"xl.*inpaint", _with(_SDXL, unet=("UNet2DConditionModel", {"sdxl": True, "in_channels": 9}))),
    (r"xl.*refiner", {"unet": ("UNet2DConditionModel", {"sdxl": True}), "vae": _VAE, "text_encoder_2": _CLIP2}),
    (r"xl|playground", _SDXL),
    (r"inpaint", _with(_SD, unet=("UNet2DConditionModel", {"in_channels": 9}))),
    (r"stable-diffusion|sd-turbo|dreamshaper|realistic|lcm|latent-consistency", _SD),
)

NOT_KNOWN = "which diffusers components this repo has is not known offline " \
            "(its model_index.json is needed; the id matches no pattern of the name table)"


def components(model_id: str, index: Any, buildable: frozenset[str]) -> tuple[Spec, str] | str:
    """(components, where they came from: ``model_index.json`` or ``name table``) for a
    repo, or why they are not known. ``index``: its model_index.json, when known;
    ``buildable``: the classes that can be built (an index's others are left out)."""
    if isinstance(index, dict) and "_class_name" in index:
        pipeline = str(index["_class_name"])
        spec: Spec = {}
        for name, value in index.items():
            if isinstance(value, (list, tuple)) and len(value) == 2 and value[1] in buildable:
                spec[name] = (value[1], _index_kwargs(value[1], pipeline, model_id, index))
        if spec:
            return spec, "model_index.json"
        return f"its model_index.json ({pipeline}) names no component class built here"
    name = model_id.lower()
    for pattern, found in NAME_TABLE:
        if re.search(pattern, name):
            return found if isinstance(found, str) else (dict(found), "name table")
    return NOT_KNOWN


def _index_kwargs(cls: str, pipeline: str, model_id: str, index: dict[str, Any]) -> dict[str, Any]:
    """Builder arguments a model_index.json implies (SDXL, inpainting, Flux's VAE, ...)."""
    if cls == "UNet2DConditionModel":
        channels = 9 if "Inpaint" in pipeline else 8 if ("Marigold" in pipeline or "Zero1to3" in pipeline) else 4
        return {"sdxl": "XL" in pipeline, "in_channels": channels}
    if cls == "AutoencoderKL" and ("Flux" in pipeline or "StableDiffusion3" in pipeline):
        return {"latent_channels": 16}
    if cls == "FluxTransformer2DModel":
        return {"guidance": "schnell" not in model_id.lower()}
    if cls == "WanTransformer3DModel":
        return {"image": "image_encoder" in index or "ImageToVideo" in pipeline}
    return {}
