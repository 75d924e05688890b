"""Tiny diffusers components, written by hand: each a config and its forward inputs.

A component builder returns (model, inputs); the sizes keep every kind of block of the
real class (cross-attention down/up blocks, the SDXL time/text embedding, Flux's joint
and single blocks) at widths of 16-64.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

BATCH = 2
TEXT_DIM = 32  # the text encoders' width the denoisers cross-attend to
TEXT_LEN = 8


def _randn(gen: Any, *shape: int) -> Any:
    import torch

    return torch.randn(*shape, generator=gen)


def _unet_config(*, in_channels: int = 4, sdxl: bool = False) -> dict[str, Any]:
    config: dict[str, Any] = dict(
        sample_size=16, in_channels=in_channels, out_channels=4, block_out_channels=(32, 64), layers_per_block=1,
        down_block_types=("CrossAttnDownBlock2D", "DownBlock2D"), up_block_types=("UpBlock2D", "CrossAttnUpBlock2D"),
        cross_attention_dim=TEXT_DIM, attention_head_dim=8, norm_num_groups=8,
    )
    if sdxl:
        config.update(addition_embed_type="text_time", addition_time_embed_dim=8,
                      projection_class_embeddings_input_dim=6 * 8 + TEXT_DIM)
    return config


def _unet_inputs(gen: Any, *, in_channels: int, sdxl: bool) -> dict[str, Any]:
    import torch

    inputs: dict[str, Any] = {"sample": _randn(gen, BATCH, in_channels, 16, 16), "timestep": torch.tensor([10, 500]),
                              "encoder_hidden_states": _randn(gen, BATCH, TEXT_LEN, TEXT_DIM)}
    if sdxl:
        inputs["added_cond_kwargs"] = {"text_embeds": _randn(gen, BATCH, TEXT_DIM),
                                       "time_ids": torch.tensor([[64.0, 64, 0, 0, 64, 64]] * BATCH)}
    return inputs


def unet(gen: Any, *, in_channels: int = 4, sdxl: bool = False) -> tuple[Any, dict[str, Any]]:
    """UNet2DConditionModel (SD 1.x/2.x; SDXL with its text/time embedding)."""
    from diffusers import UNet2DConditionModel

    model = UNet2DConditionModel(**_unet_config(in_channels=in_channels, sdxl=sdxl))
    return model, _unet_inputs(gen, in_channels=in_channels, sdxl=sdxl)


def vae(gen: Any, *, latent_channels: int = 4) -> tuple[Any, dict[str, Any]]:
    """AutoencoderKL: encode then decode an image."""
    from diffusers import AutoencoderKL

    model = AutoencoderKL(in_channels=3, out_channels=3, latent_channels=latent_channels, block_out_channels=(16, 32),
                          down_block_types=("DownEncoderBlock2D",) * 2, up_block_types=("UpDecoderBlock2D",) * 2,
                          layers_per_block=1, norm_num_groups=8, sample_size=32)
    return model, {"sample": _randn(gen, BATCH, 3, 32, 32)}


def controlnet(gen: Any) -> tuple[Any, dict[str, Any]]:
    """ControlNetModel (its zero convolutions output zeros at init: the gradient still flows)."""
    from diffusers import ControlNetModel

    config = {k: v for k, v in _unet_config().items() if k not in ("out_channels", "up_block_types", "sample_size")}
    model = ControlNetModel(**config, conditioning_embedding_out_channels=(8, 16))
    inputs = _unet_inputs(gen, in_channels=4, sdxl=False)
    inputs["controlnet_cond"] = _randn(gen, BATCH, 3, 32, 32)
    return model, inputs


def flux(gen: Any, *, guidance: bool = True) -> tuple[Any, dict[str, Any]]:
    """FluxTransformer2DModel: packed latents, image/text position ids, pooled text."""
    import torch
    from diffusers import FluxTransformer2DModel

    model = FluxTransformer2DModel(patch_size=1, in_channels=16, num_layers=1, num_single_layers=1, attention_head_dim=16,
                                   num_attention_heads=2, joint_attention_dim=TEXT_DIM, pooled_projection_dim=TEXT_DIM,
                                   guidance_embeds=guidance, axes_dims_rope=(4, 6, 6))
    seq = 16
    inputs: dict[str, Any] = {
        "hidden_states": _randn(gen, BATCH, seq, 16), "encoder_hidden_states": _randn(gen, BATCH, TEXT_LEN, TEXT_DIM),
        "pooled_projections": _randn(gen, BATCH, TEXT_DIM), "timestep": torch.tensor([0.1, 0.9]),
        "img_ids": torch.stack(torch.meshgrid(torch.zeros(1), torch.arange(4.0), torch.arange(4.0), indexing="ij"), -1).reshape(seq, 3),
        "txt_ids": torch.zeros(TEXT_LEN, 3),
    }
    if guidance:
        inputs["guidance"] = torch.tensor([3.5, 3.5])
    return model, inputs


def sd3(gen: Any) -> tuple[Any, dict[str, Any]]:
    """SD3Transformer2DModel (MMDiT)."""
    import torch
    from diffusers import SD3Transformer2DModel

    model = SD3Transformer2DModel(sample_size=8, patch_size=2, in_channels=4, num_layers=1, attention_head_dim=8,
                                  num_attention_heads=2, joint_attention_dim=TEXT_DIM, caption_projection_dim=16,
                                  pooled_projection_dim=TEXT_DIM, out_channels=4, pos_embed_max_size=16)
    return model, {"hidden_states": _randn(gen, BATCH, 4, 8, 8), "encoder_hidden_states": _randn(gen, BATCH, TEXT_LEN, TEXT_DIM),
                   "pooled_projections": _randn(gen, BATCH, TEXT_DIM), "timestep": torch.tensor([10, 500])}


# model_index.json class name -> builder (the classes this module can build).
BUILDERS: dict[str, Callable[..., tuple[Any, dict[str, Any]]]] = {
    "UNet2DConditionModel": unet,
    "AutoencoderKL": vae,
    "ControlNetModel": controlnet,
    "FluxTransformer2DModel": flux,
    "SD3Transformer2DModel": sd3,
}
