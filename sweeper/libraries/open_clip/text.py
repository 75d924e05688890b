"""open_clip's transformers text towers, built offline.

Some open_clip configs take their text tower from transformers (``text_cfg.hf_model_name``:
roberta-base, xlm-roberta, mT5, NLLB). open_clip reads that model's ``config.json`` from
the Hub even when it builds random weights; offline it cannot. The checkpoints it names are
few and fixed, so their released configs are a table here: the model type and the sizes
that differ from transformers' defaults for that type. A tiny build shrinks that config
with the transformers zoo's own rules (``shrink_config_dict``).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

# hf_model_name -> (model type, fields of its released config.json that differ from the
# type's transformers defaults). Sizes as published with each checkpoint.
TEXT_TOWERS: dict[str, tuple[str, dict[str, Any]]] = {
    "roberta-base": ("roberta", {"max_position_embeddings": 514, "type_vocab_size": 1}),
    "xlm-roberta-base": ("xlm-roberta", {"vocab_size": 250002, "max_position_embeddings": 514, "type_vocab_size": 1}),
    "xlm-roberta-large": ("xlm-roberta", {"vocab_size": 250002, "max_position_embeddings": 514, "type_vocab_size": 1,
                                          "hidden_size": 1024, "num_hidden_layers": 24, "num_attention_heads": 16,
                                          "intermediate_size": 4096}),
    "google/mt5-base": ("mt5", {"d_model": 768, "d_ff": 2048, "num_layers": 12, "num_decoder_layers": 12,
                                "num_heads": 12, "tie_word_embeddings": False}),
    "google/mt5-xl": ("mt5", {"d_model": 2048, "d_ff": 5120, "num_layers": 24, "num_decoder_layers": 24,
                              "num_heads": 32, "tie_word_embeddings": False}),
    "facebook/nllb-200-distilled-600M": ("m2m_100", {"vocab_size": 256206}),
    "facebook/nllb-200-distilled-1.3B": ("m2m_100", {"vocab_size": 256206, "encoder_layers": 24, "decoder_layers": 24,
                                                     "encoder_ffn_dim": 8192, "decoder_ffn_dim": 8192}),
}


def text_config(hf_name: str, *, tiny: bool) -> Any:
    """The transformers config of open_clip's text tower ``hf_name``, shrunk when ``tiny``;
    None when the table does not know it."""
    known = TEXT_TOWERS.get(hf_name)
    if known is None:
        return None
    from transformers import AutoConfig

    model_type, released = known
    data = AutoConfig.for_model(model_type, **released).to_dict()
    if tiny:
        from sweeper.libraries.transformers.configs import shrink_config_dict

        data = shrink_config_dict(data, "tiny")
    data.pop("model_type", None)
    return AutoConfig.for_model(model_type, **data)


@contextlib.contextmanager
def offline_text_towers(*, tiny: bool) -> Iterator[None]:
    """While building: open_clip's ``AutoConfig.from_pretrained(hf_name)`` answers from the
    table instead of the Hub (names the table lacks still go to transformers)."""
    from open_clip import hf_model

    original = hf_model.AutoConfig

    class TableConfig:
        @staticmethod
        def from_pretrained(name: str, *args: Any, **kwargs: Any) -> Any:
            found = text_config(name, tiny=tiny)
            return found if found is not None else original.from_pretrained(name, *args, **kwargs)

    hf_model.AutoConfig = TableConfig
    try:
        yield
    finally:
        hf_model.AutoConfig = original
