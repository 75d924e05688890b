"""sentence-transformers as it runs: a transformers encoder, then Pooling (then Normalize).

The encoder is what the library loads: the type's base model, or the encoder stack alone of
an encoder-decoder (T5). Pooling and normalisation come from the repo's own
``modules.json`` online, else a name table of well-known families, else mean pooling with a
normalisation (``layout``); the record's notes say which (``pooling_source``).
The loss pulls the batch's cosine-similarity matrix towards the identity (a contrastive
objective): the mean of normalised embeddings is ~1e-7 and its gradient compares nothing.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from sweeper.libraries.base import Library, count_parameters
from sweeper.libraries.built import Built
from sweeper.libraries.sentence_transformers.layout import SentenceLayout, layout_of
from sweeper.records import ModelRef


class SentenceTransformers(Library):
    """sentence-transformers models: the encoder built by the transformers path, wrapped."""

    name = "sentence-transformers"
    hub_names = frozenset({"sentence-transformers"})
    packages = ("sentence_transformers", "transformers")

    def build(self, ref: ModelRef, cfg: Any) -> Built:
        """The encoder (see ``encoder_class``) + the repo's Pooling (+ Normalize)."""
        self.require()
        from sweeper.libraries.transformers.build import build

        encoder_ref = dataclasses.replace(ref, library_name="transformers",
                                          architecture=ref.architecture or encoder_class(ref.model_type or ""))
        encoder = build(encoder_ref, cfg)
        layout = layout_of(ref, cfg, online=encoder.notes.get("config_source") == "hub")
        stack = encoder_of(encoder.model)
        model = SentenceModel(stack, layout)
        encoder_name = encoder.architecture if stack is encoder.model else f"{encoder.architecture}.encoder"
        inputs = {k: v for k, v in encoder.inputs.items() if k in ("input_ids", "attention_mask", "token_type_ids")}
        notes = dict(encoder.notes, modules=layout.describe(), pooling_source=layout.source)
        if layout.unbuilt:
            notes["modules_unbuilt"] = ",".join(layout.unbuilt)
        return Built(model=model, inputs=inputs, architecture=f"SentenceTransformer({encoder_name})",
                     model_type=encoder.model_type, num_parameters=count_parameters(model), config=encoder.config,
                     has_labels=True, notes=notes)


def encoder_class(model_type: str) -> str | None:
    """The class sentence-transformers runs for a model type: the encoder-only class of an
    encoder-decoder (``T5EncoderModel`` for t5: a sentence model never runs the decoder),
    else the type's base model (``AutoModel``)."""
    from sweeper.libraries.transformers.heads import heads_of

    heads = heads_of(model_type)
    found = heads.get("TEXT_ENCODING") or heads.get("")
    return found[0] if found else None


def encoder_of(model: Any) -> Any:
    """The module the sentence model runs: ``model`` itself, or the encoder stack of an
    encoder-decoder built whole (a type without an encoder-only class, or an explicit
    architecture), as sentence-transformers loads such models encoder-only."""
    config = getattr(model, "config", None)
    if getattr(config, "is_encoder_decoder", False) and callable(getattr(model, "get_encoder", None)):
        encoder = model.get_encoder()
        if encoder is not None and encoder is not model:
            return encoder
    return model


def _modules(hidden: int, layout: SentenceLayout) -> Any:
    """Pooling, Dense..., Normalize as sentence-transformers' own modules, in order."""
    import torch

    try:
        from sentence_transformers.sentence_transformer.modules import Dense, Normalize, Pooling
    except ImportError:  # sentence-transformers before 6
        from sentence_transformers.models import Dense, Normalize, Pooling

    mode = layout.pooling[0] if len(layout.pooling) == 1 else layout.pooling
    steps = [Pooling(hidden, pooling_mode=mode, include_prompt=layout.include_prompt)]
    width = hidden * len(layout.pooling)
    for spec in layout.dense:
        activation = getattr(torch.nn, spec.activation)()
        steps.append(Dense(width, spec.out_features, bias=spec.bias, activation_function=activation))
        width = spec.out_features
    if layout.normalize:
        steps.append(Normalize())
    return torch.nn.Sequential(*steps)


def _make_class() -> type:
    import torch
    from transformers.utils import ModelOutput

    class _SentenceModel(torch.nn.Module):
        """encoder -> Pooling (-> Dense) (-> Normalize), with a contrastive loss over the batch."""

        def __init__(self, encoder: Any, layout: SentenceLayout) -> None:
            super().__init__()
            self.encoder = encoder
            hidden = encoder.config.hidden_size if hasattr(encoder.config, "hidden_size") else encoder.config.d_model
            # In the encoder's dtype: a Dense layer is created in float32 (bfloat16 sweeps).
            self.head = _modules(hidden, layout).to(next(encoder.parameters()).dtype)
            self.config = encoder.config

        def forward(self, **inputs: Any) -> Any:
            out = self.encoder(**inputs)
            mask = inputs.get("attention_mask")
            tokens = out[0]
            if mask is None:
                mask = torch.ones(tokens.shape[:2], dtype=torch.long, device=tokens.device)
            features = self.head({"token_embeddings": tokens, "attention_mask": mask})
            emb = features["sentence_embedding"]
            # Cosine similarities whether or not the model normalises: without a Normalize
            # module the Gram matrix of raw embeddings has gradients in the thousands.
            unit = torch.nn.functional.normalize(emb, dim=-1)
            similarity = unit @ unit.T
            target = torch.eye(similarity.shape[0], dtype=similarity.dtype, device=similarity.device)
            return ModelOutput(sentence_embedding=emb, loss=(similarity - target).pow(2).mean())

    return _SentenceModel


def SentenceModel(encoder: Any, layout: SentenceLayout | None = None) -> Any:  # noqa: N802 - a factory that reads like the class (torch imported lazily)
    """The sentence model around ``encoder`` laid out as ``layout`` (see ``_make_class``)."""
    return _make_class()(encoder, layout or SentenceLayout()).train(encoder.training)
