"""Tiny video and DiT components of diffusers pipelines (Stable Video Diffusion,
DepthCrafter, Wan 2.1, LTX-Video, HunyuanDiT, FLUX.1 Redux), written by hand like ``parts``:
each builder returns (model, inputs), keeping every kind of block of the real class
(spatio-temporal attention, causal 3D convolutions, rotary positions) at widths of 16-64
and 2-3 frames.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from sweeper.libraries.diffusers.parts import BATCH, TEXT_DIM, TEXT_LEN, _randn

FRAMES = 2


def svd_unet(gen: Any) -> tuple[Any, dict[str, Any]]:
    """UNetSpatioTemporalConditionModel (Stable Video Diffusion, DepthCrafter): latents
    and the image latents side by side (8 channels), the CLIP image embedding as text."""
    import torch
    from diffusers import UNetSpatioTemporalConditionModel

    model = UNetSpatioTemporalConditionModel(
        sample_size=16, in_channels=8, out_channels=4, block_out_channels=(32, 64), layers_per_block=1,
        down_block_types=("CrossAttnDownBlockSpatioTemporal", "DownBlockSpatioTemporal"),
        up_block_types=("UpBlockSpatioTemporal", "CrossAttnUpBlockSpatioTemporal"), addition_time_embed_dim=8,
        projection_class_embeddings_input_dim=3 * 8, cross_attention_dim=TEXT_DIM, num_attention_heads=(2, 4),
        num_frames=FRAMES,
    )
    return model, {"sample": _randn(gen, BATCH, FRAMES, 8, 16, 16), "timestep": torch.tensor(10.0),
                   "encoder_hidden_states": _randn(gen, BATCH, 1, TEXT_DIM),
                   "added_time_ids": torch.tensor([[6.0, 127.0, 0.02]] * BATCH)}


def svd_vae(gen: Any) -> tuple[Any, dict[str, Any]]:
    """AutoencoderKLTemporalDecoder: a 2D encoder, a decoder with temporal mixing."""
    from diffusers import AutoencoderKLTemporalDecoder

    model = AutoencoderKLTemporalDecoder(in_channels=3, out_channels=3, down_block_types=("DownEncoderBlock2D",) * 2,
                                         block_out_channels=(32, 64), layers_per_block=1, latent_channels=4, sample_size=32)
    return model, {"sample": _randn(gen, FRAMES, 3, 32, 32), "num_frames": FRAMES}


def wan_transformer(gen: Any, *, image: bool = False) -> tuple[Any, dict[str, Any]]:
    """WanTransformer3DModel (text-to-video; image-to-video adds the image latents'
    channels and a CLIP image embedding through added key/value projections)."""
    import torch
    from diffusers import WanTransformer3DModel

    in_channels = 36 if image else 16
    model = WanTransformer3DModel(patch_size=(1, 2, 2), num_attention_heads=2, attention_head_dim=16,
                                  in_channels=in_channels, out_channels=16, text_dim=TEXT_DIM, freq_dim=16, ffn_dim=64,
                                  num_layers=1, image_dim=TEXT_DIM if image else None,
                                  added_kv_proj_dim=32 if image else None, rope_max_seq_len=32)
    inputs = {"hidden_states": _randn(gen, BATCH, in_channels, FRAMES, 8, 8), "timestep": torch.tensor([10, 500]),
              "encoder_hidden_states": _randn(gen, BATCH, TEXT_LEN, TEXT_DIM)}
    if image:
        inputs["encoder_hidden_states_image"] = _randn(gen, BATCH, 4, TEXT_DIM)
    return model, inputs


def wan_vae(gen: Any) -> tuple[Any, dict[str, Any]]:
    """AutoencoderKLWan: causal 3D convolutions with a feature cache over frames."""
    from diffusers import AutoencoderKLWan

    model = AutoencoderKLWan(base_dim=8, z_dim=4, dim_mult=[1, 2], num_res_blocks=1, temperal_downsample=[True],
                             latents_mean=[0.0] * 4, latents_std=[1.0] * 4)
    return model, {"sample": _randn(gen, 1, 3, 1 + 4 * (FRAMES - 1), 16, 16)}


def ltx_transformer(gen: Any) -> tuple[Any, dict[str, Any]]:
    """LTXVideoTransformer3DModel: packed video tokens with 3D rotary positions."""
    import torch
    from diffusers import LTXVideoTransformer3DModel

    model = LTXVideoTransformer3DModel(in_channels=8, out_channels=8, num_attention_heads=2, attention_head_dim=16,
                                       cross_attention_dim=32, num_layers=1, caption_channels=TEXT_DIM)
    frames, height, width = FRAMES, 4, 4
    return model, {"hidden_states": _randn(gen, BATCH, frames * height * width, 8),
                   "encoder_hidden_states": _randn(gen, BATCH, TEXT_LEN, TEXT_DIM), "timestep": torch.tensor([10, 500]),
                   "encoder_attention_mask": torch.ones(BATCH, TEXT_LEN, dtype=torch.long),
                   "num_frames": frames, "height": height, "width": width}


def ltx_vae(gen: Any) -> tuple[Any, dict[str, Any]]:
    """AutoencoderKLLTXVideo: causal 3D encoder, spatio-temporal up/down scaling."""
    from diffusers import AutoencoderKLLTXVideo

    model = AutoencoderKLLTXVideo(latent_channels=8, block_out_channels=(16, 32), decoder_block_out_channels=(16, 32),
                                  down_block_types=("LTXVideoDownBlock3D",) * 2, layers_per_block=(1, 1, 1),
                                  decoder_layers_per_block=(1, 1, 1), spatio_temporal_scaling=(True, False),
                                  decoder_spatio_temporal_scaling=(True, False), decoder_inject_noise=(False,) * 3,
                                  downsample_type=("conv", "conv"), upsample_residual=(False, False),
                                  upsample_factor=(1, 1), patch_size=2, patch_size_t=1)
    return model, {"sample": _randn(gen, 1, 3, 1 + 2 * (FRAMES - 1), 16, 16)}


def hunyuan_dit(gen: Any) -> tuple[Any, dict[str, Any]]:
    """HunyuanDiT2DModel: a DiT over two text encoders (a CLIP-like BERT and a T5)."""
    import torch
    from diffusers import HunyuanDiT2DModel

    model = HunyuanDiT2DModel(num_attention_heads=2, attention_head_dim=16, in_channels=4, patch_size=2, sample_size=8,
                              hidden_size=32, num_layers=2, cross_attention_dim=TEXT_DIM, cross_attention_dim_t5=TEXT_DIM,
                              pooled_projection_dim=16, text_len=TEXT_LEN, text_len_t5=TEXT_LEN)
    from diffusers.models.embeddings import get_2d_rotary_pos_embed

    rotary = get_2d_rotary_pos_embed(16, ((0, 0), (4, 4)), (4, 4))
    # The pipeline's timestep is a float tensor of the latents' dtype.
    return model, {"hidden_states": _randn(gen, BATCH, 4, 8, 8), "timestep": torch.tensor([10.0, 500.0]),
                   "encoder_hidden_states": _randn(gen, BATCH, TEXT_LEN, TEXT_DIM),
                   "text_embedding_mask": torch.ones(BATCH, TEXT_LEN, dtype=torch.long),
                   "encoder_hidden_states_t5": _randn(gen, BATCH, TEXT_LEN, TEXT_DIM),
                   "text_embedding_mask_t5": torch.ones(BATCH, TEXT_LEN, dtype=torch.long),
                   "image_meta_size": torch.tensor([[64.0, 64, 64, 64, 0, 0]] * BATCH),
                   "style": torch.zeros(BATCH, dtype=torch.long),
                   "image_rotary_emb": rotary}


def redux(gen: Any) -> tuple[Any, dict[str, Any]]:
    """ReduxImageEncoder (FLUX.1 Redux): SigLIP image tokens projected to Flux's text width."""
    from diffusers.pipelines.flux.modeling_flux import ReduxImageEncoder

    return ReduxImageEncoder(redux_dim=TEXT_DIM, txt_in_features=64), {"x": _randn(gen, BATCH, 16, TEXT_DIM)}


# model_index.json class name -> builder.
BUILDERS: dict[str, Callable[..., tuple[Any, dict[str, Any]]]] = {
    "UNetSpatioTemporalConditionModel": svd_unet,
    "AutoencoderKLTemporalDecoder": svd_vae,
    "WanTransformer3DModel": wan_transformer,
    "AutoencoderKLWan": wan_vae,
    "LTXVideoTransformer3DModel": ltx_transformer,
    "AutoencoderKLLTXVideo": ltx_vae,
    "HunyuanDiT2DModel": hunyuan_dit,
    "ReduxImageEncoder": redux,
}
