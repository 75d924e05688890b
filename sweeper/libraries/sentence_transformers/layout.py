"""What follows the encoder in a sentence-transformers model: its pooling and normalisation.

Online, the repo says it: ``modules.json`` lists the modules in order and the pooling
module's own ``config.json`` (``1_Pooling/config.json``) names the pooling mode. Offline,
a small table of well-known families, each entry as its model card and published
``modules.json`` document it; otherwise mean pooling with a normalisation (the layout of
most of the Hub's sentence models). ``source`` says which of the three decided.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from sweeper.records import ModelRef

POOLING_MODES = ("cls", "max", "mean", "mean_sqrt_len_tokens", "weightedmean", "lasttoken")
# sentence-transformers before 5 wrote one boolean per mode (still read by 6).
_LEGACY_MODES = {
    "pooling_mode_cls_token": "cls", "pooling_mode_max_tokens": "max", "pooling_mode_mean_tokens": "mean",
    "pooling_mode_mean_sqrt_len_tokens": "mean_sqrt_len_tokens",
    "pooling_mode_weightedmean_tokens": "weightedmean", "pooling_mode_lasttoken": "lasttoken",
}


@dataclass(frozen=True)
class DenseSpec:
    """A Dense module after pooling: its output width, bias and activation (a torch.nn class)."""

    out_features: int
    bias: bool = True
    activation: str = "Tanh"


@dataclass(frozen=True)
class SentenceLayout:
    """Pooling mode(s), the Dense modules and whether a Normalize module follows them;
    where that was learned."""

    pooling: tuple[str, ...] = ("mean",)
    normalize: bool = True
    source: str = "default"
    include_prompt: bool = True
    dense: tuple[DenseSpec, ...] = ()
    # Module types of the repo's modules.json that are not built here (LayerNorm, ...).
    unbuilt: tuple[str, ...] = ()

    def describe(self) -> str:
        """``encoder+Pooling(cls)+Dense(768,Tanh)+Normalize`` as the record's notes show it."""
        parts = ["encoder", "Pooling(" + ",".join(self.pooling) + ")"]
        parts += [f"Dense({d.out_features},{d.activation})" for d in self.dense]
        return "+".join(parts + (["Normalize"] if self.normalize else []))


# (pattern on the lowercased id, pooling, normalize). Only families whose model cards and
# published modules.json agree; rerankers (cross-encoders) and LLM-based embedders are left out.
NAME_TABLE: tuple[tuple[str, str, bool], ...] = (
    (r"^sentence-transformers/all-", "mean", True),
    (r"^sentence-transformers/(multi-qa|msmarco)-.*-cos-v\d", "mean", True),
    (r"^sentence-transformers/multi-qa-.*-dot-v\d", "cls", False),
    (r"^sentence-transformers/msmarco-.*-dot-v\d", "mean", False),
    (r"^sentence-transformers/msmarco-distilbert-base-tas-b$", "cls", False),
    (r"^sentence-transformers/(paraphrase-|.*-nli-(stsb-)?mean-tokens$)", "mean", False),
    (r"^sentence-transformers/sentence-t5-", "mean", True),
    (r"^sentence-transformers/labse$", "cls", True),
    (r"^baai/bge-(small|base|large)-(en|zh)(-v1\.5)?$", "cls", True),
    (r"^baai/bge-m3$", "cls", True),
    (r"^intfloat/(multilingual-)?e5-(small|base|large)", "mean", True),
    (r"^thenlper/gte-", "mean", True),
    (r"^alibaba-nlp/gte-(base|large)-en-v1\.5$", "cls", True),
    (r"^snowflake/snowflake-arctic-embed-", "cls", True),
    (r"^nomic-ai/nomic-embed-text-v1", "mean", True),
    (r"^hkunlp/instructor-", "mean", True),
)


def from_name(model_id: str) -> SentenceLayout | None:
    """The layout the name table gives ``model_id``, or None."""
    name = model_id.lower()
    for pattern, pooling, normalize in NAME_TABLE:
        if re.search(pattern, name):
            return SentenceLayout(pooling=(pooling,), normalize=normalize, source="name table")
    return None


def pooling_modes(config: dict[str, Any]) -> tuple[str, ...]:
    """The modes a Pooling module's config.json names (new ``pooling_mode`` or legacy booleans)."""
    mode = config.get("pooling_mode")
    if mode is None:
        modes = tuple(m for key, m in _LEGACY_MODES.items() if config.get(key))
    else:
        modes = (mode,) if isinstance(mode, str) else tuple(mode)
    unknown = [m for m in modes if m not in POOLING_MODES]
    if unknown:
        raise ValueError(f"unknown pooling mode(s) {unknown}")
    return modes or ("mean",)


def from_repo(modules: list[dict[str, Any]], read: Any) -> SentenceLayout:
    """The layout ``modules.json`` describes; ``read(path)`` returns a module's config.json
    as a dict (or None when the repo has none)."""
    pooling: tuple[str, ...] = ("mean",)
    include_prompt, normalize, unbuilt, dense = True, False, [], []
    for position, module in enumerate(sorted(modules, key=lambda m: int(m.get("idx", 0)))):
        kind = str(module.get("type", "")).rsplit(".", 1)[-1]
        if kind == "Transformer" and position == 0:
            continue  # the encoder, built by the transformers path
        if kind == "Pooling":
            config = read(f"{module.get('path', '')}/config.json".lstrip("/")) or {}
            pooling, include_prompt = pooling_modes(config), bool(config.get("include_prompt", True))
        elif kind == "Normalize":
            normalize = True
        elif kind == "Dense" and (spec := dense_spec(read(f"{module.get('path', '')}/config.json".lstrip("/")))):
            dense.append(spec)
        else:
            unbuilt.append(kind or "?")
    return SentenceLayout(pooling=pooling, normalize=normalize, source="repo", include_prompt=include_prompt,
                          dense=tuple(dense), unbuilt=tuple(unbuilt))


def dense_spec(config: dict[str, Any] | None) -> DenseSpec | None:
    """A Dense module's config.json as a spec, or None when it cannot be built here (no
    width, or an activation that is not a torch.nn class: importing any other name the
    repo gives would run code of its choosing)."""
    if not isinstance(config, dict) or not isinstance(config.get("out_features"), int):
        return None
    qualified = str(config.get("activation_function") or "torch.nn.modules.activation.Tanh")
    if not qualified.startswith("torch.nn."):
        return None
    activation = qualified.rsplit(".", 1)[-1]
    import torch

    if not isinstance(getattr(torch.nn, activation, None), type):
        return None
    return DenseSpec(out_features=config["out_features"], bias=bool(config.get("bias", True)), activation=activation)


def fetch_layout(ref: ModelRef, cfg: Any) -> SentenceLayout | None:
    """The layout the repo's own ``modules.json`` gives, or None when the repo has none."""
    from huggingface_hub import hf_hub_download
    from huggingface_hub.errors import RemoteEntryNotFoundError

    from sweeper.hub.access import endpoint
    from sweeper.hub.http import install
    from sweeper.libraries.transformers.pretrained import _hub_errors

    install(cfg)

    def read(filename: str) -> Any:
        try:
            with _hub_errors(ref):
                path = hf_hub_download(ref.model_id, filename, revision=ref.revision, endpoint=endpoint())
        except RemoteEntryNotFoundError:
            return None
        with open(path, encoding="utf-8") as handle:
            return json.load(handle)

    modules = read("modules.json")
    if not isinstance(modules, list) or not modules:
        return None
    return from_repo(modules, read)


def layout_of(ref: ModelRef, cfg: Any, *, online: bool) -> SentenceLayout:
    """The repo's layout when ``online`` (its config came from the Hub), else the name
    table's, else the default. A repo without a readable modules.json falls back the same
    way, and ``source`` says why."""
    why = ""
    if online:
        from sweeper.libraries.transformers.pretrained import HubUnreachableError

        try:
            found = fetch_layout(ref, cfg)
        except (HubUnreachableError, ValueError) as exc:  # ValueError: modules.json not valid
            found, why = None, f" ({type(exc).__name__}: {exc})"[:200]
        if found is not None:
            return found
        why = why or " (no modules.json in the repo)"
    layout = from_name(ref.model_id) or SentenceLayout()
    return SentenceLayout(pooling=layout.pooling, normalize=layout.normalize, source=layout.source + why)
