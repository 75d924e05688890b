"""A diffusers pipeline's text (and image) encoders, tiny: transformers models, built
from their transformers configs shrunk to the width the tiny denoisers cross-attend to.

A builder returns (model, inputs) like the denoisers' (``parts``); the caller
seeds the initialisation. Text encoders take ``TEXT_LEN`` token ids, image encoders a
small image batch.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from sweeper.libraries.diffusers.parts import BATCH, TEXT_DIM, TEXT_LEN

VOCAB = 99


def _tokens(gen: Any) -> dict[str, Any]:
    import torch

    return {"input_ids": torch.randint(0, VOCAB, (BATCH, TEXT_LEN), generator=gen)}


def _clip_config() -> Any:
    from transformers import CLIPTextConfig

    return CLIPTextConfig(vocab_size=VOCAB, hidden_size=TEXT_DIM, intermediate_size=2 * TEXT_DIM, num_hidden_layers=1,
                          num_attention_heads=2, max_position_embeddings=TEXT_LEN * 2, projection_dim=TEXT_DIM,
                          bos_token_id=0, eos_token_id=2, pad_token_id=1)


def clip_text(gen: Any) -> tuple[Any, dict[str, Any]]:
    """CLIPTextModel (SD 1.x/2.x, SDXL's first encoder, Flux's pooled text)."""
    from transformers import CLIPTextModel

    return CLIPTextModel(_clip_config()), _tokens(gen)


def clip_text_projection(gen: Any) -> tuple[Any, dict[str, Any]]:
    """CLIPTextModelWithProjection (SDXL's and SD3's second encoder)."""
    from transformers import CLIPTextModelWithProjection

    return CLIPTextModelWithProjection(_clip_config()), _tokens(gen)


def _t5_config() -> Any:
    from transformers import T5Config

    return T5Config(vocab_size=VOCAB, d_model=TEXT_DIM, d_kv=8, d_ff=2 * TEXT_DIM, num_layers=1, num_heads=2,
                    relative_attention_num_buckets=8, feed_forward_proj="gated-gelu")


def t5_encoder(gen: Any) -> tuple[Any, dict[str, Any]]:
    """T5EncoderModel (Flux, SD3, LTX-Video, HunyuanDiT's second encoder)."""
    from transformers import T5EncoderModel

    return T5EncoderModel(_t5_config()), _tokens(gen)


def umt5_encoder(gen: Any) -> tuple[Any, dict[str, Any]]:
    """UMT5EncoderModel (Wan)."""
    from transformers import UMT5Config, UMT5EncoderModel

    config = UMT5Config(**{k: v for k, v in _t5_config().to_dict().items() if k in UMT5Config().to_dict()})
    return UMT5EncoderModel(config), _tokens(gen)


def bert(gen: Any) -> tuple[Any, dict[str, Any]]:
    """BertModel (HunyuanDiT's bilingual CLIP text tower)."""
    from transformers import BertConfig, BertModel

    config = BertConfig(vocab_size=VOCAB, hidden_size=TEXT_DIM, num_hidden_layers=1, num_attention_heads=2,
                        intermediate_size=2 * TEXT_DIM, max_position_embeddings=TEXT_LEN * 2)
    return BertModel(config, add_pooling_layer=False), _tokens(gen)


def _pixels(gen: Any) -> dict[str, Any]:
    import torch

    return {"pixel_values": torch.randn(BATCH, 3, 32, 32, generator=gen)}


def _vision_config(cls: Any, **extra: Any) -> Any:
    """A vision tower's config: 1 layer at the text width, 32-pixel images in 8-pixel patches."""
    return cls(hidden_size=TEXT_DIM, intermediate_size=2 * TEXT_DIM, num_hidden_layers=1, num_attention_heads=2,
               image_size=32, patch_size=8, **extra)


def clip_vision_projection(gen: Any) -> tuple[Any, dict[str, Any]]:
    """CLIPVisionModelWithProjection (Stable Video Diffusion's and zero123's image encoder)."""
    from transformers import CLIPVisionConfig, CLIPVisionModelWithProjection

    return CLIPVisionModelWithProjection(_vision_config(CLIPVisionConfig, projection_dim=TEXT_DIM)), _pixels(gen)


def clip_vision(gen: Any) -> tuple[Any, dict[str, Any]]:
    """CLIPVisionModel (Wan image-to-video's image encoder)."""
    from transformers import CLIPVisionConfig, CLIPVisionModel

    return CLIPVisionModel(_vision_config(CLIPVisionConfig, projection_dim=TEXT_DIM)), _pixels(gen)


def siglip_vision(gen: Any) -> tuple[Any, dict[str, Any]]:
    """SiglipVisionModel (FLUX.1 Redux's image encoder)."""
    from transformers import SiglipVisionConfig, SiglipVisionModel

    return SiglipVisionModel(_vision_config(SiglipVisionConfig)), _pixels(gen)


# model_index.json class name -> builder.
BUILDERS: dict[str, Callable[..., tuple[Any, dict[str, Any]]]] = {
    "CLIPTextModel": clip_text,
    "CLIPTextModelWithProjection": clip_text_projection,
    "T5EncoderModel": t5_encoder,
    "UMT5EncoderModel": umt5_encoder,
    "BertModel": bert,
    "CLIPVisionModelWithProjection": clip_vision_projection,
    "CLIPVisionModel": clip_vision,
    "SiglipVisionModel": siglip_vision,
}
