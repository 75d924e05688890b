"""A diffusers pipeline sampling as its users call it: the pipeline class itself, a few
inference steps (scheduler and VAE decode included), the denoiser compiled as the
diffusers documentation shows (``pipe.unet = torch.compile(pipe.unet, fullgraph=True)``).

The pipeline is assembled from the components the library built tiny. Prompts come as
embeddings from the pipeline's own text encoder (a tokenizer's vocabulary files are not
to be had offline; the encoder still runs on the device). Pipelines with an entry here:
Stable Diffusion 1.x/2.x text-to-image (a UNet2DConditionModel, an AutoencoderKL and a
CLIP text encoder). Others have none yet, and their records have no generate stage.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

STEPS = 2
GUIDANCE = 7.5  # classifier-free guidance, as users sample: the denoiser runs on both halves of the batch


@dataclass
class Sampler:
    """``sample(device, compile_backend=..., seed=...)``: the pipeline's images on
    ``device`` (float tensor, batch x channels x height x width), moved to the CPU."""

    pipeline: str
    modules: dict[str, Any]  # unet, vae, text_encoder (plain diffusers/transformers modules)
    prompt_ids: Any  # the text encoder's input ids (CPU)
    steps: int = STEPS

    def describe(self) -> dict[str, Any]:
        """What the record says of how the pipeline sampled."""
        return {"kind": "diffusion", "pipeline": self.pipeline, "steps": self.steps, "guidance_scale": GUIDANCE,
                "scheduler": "EulerDiscreteScheduler", "denoiser": "unet"}

    def sample(self, device: str, *, compile_backend: str | None, seed: int) -> Any:
        """The images of one pipeline call on ``device`` (the denoiser compiled with
        ``compile_backend`` when given); the modules are moved back to the CPU after."""
        import torch
        from diffusers import EulerDiscreteScheduler, StableDiffusionPipeline

        unet = self.modules["unet"]
        pipe = StableDiffusionPipeline(vae=self.modules["vae"], text_encoder=self.modules["text_encoder"],
                                       tokenizer=None, unet=unet, scheduler=EulerDiscreteScheduler(),
                                       safety_checker=None, feature_extractor=None, requires_safety_checker=False)
        pipe.set_progress_bar_config(disable=True)
        pipe.to(device)
        try:
            if compile_backend is not None:
                pipe.unet = torch.compile(unet, backend=compile_backend, fullgraph=True)
            ids = self.prompt_ids.to(device)
            with torch.no_grad():
                positive = pipe.text_encoder(ids)[0]
                negative = pipe.text_encoder(torch.ones_like(ids))[0]  # the empty prompt's place
                # The latents are drawn on the CPU's generator (a device may have none) and moved.
                out = pipe(prompt_embeds=positive, negative_prompt_embeds=negative, num_inference_steps=self.steps,
                           guidance_scale=GUIDANCE, output_type="pt",
                           generator=torch.Generator().manual_seed(seed))
            return out.images.detach().to("cpu")
        finally:
            for module in self.modules.values():
                module.to("cpu")


def entry(components: dict[str, tuple[str, dict[str, Any]]], built: dict[str, Any]) -> Sampler | None:
    """The sampling entry of a pipeline of ``components`` (name -> (class, builder
    arguments)) built as ``built`` (name -> ``Built``), or None when it has none."""
    classes = {name: cls for name, (cls, _) in components.items()}
    wanted = {"unet": "UNet2DConditionModel", "vae": "AutoencoderKL", "text_encoder": "CLIPTextModel"}
    if any(classes.get(name) != cls for name, cls in wanted.items()):
        return None
    unet_args = components["unet"][1]
    if unet_args.get("sdxl") or unet_args.get("lora") or unet_args.get("in_channels", 4) != 4:
        return None  # SDXL, inpainting and depth UNets take other pipelines
    modules = {name: built[name].model.model for name in wanted}  # inside the loss wrapper
    return Sampler(pipeline="StableDiffusionPipeline", modules=modules,
                   prompt_ids=built["text_encoder"].inputs["input_ids"])
