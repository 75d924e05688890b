"""The ``zoo`` source: every model type the installed transformers can build, offline.

One ref per model type with at least one model class. The ref names the head to build
(one that gives a loss and runs the whole model when the type has one), the task that
head serves and, where the config class documents one of the type's own, the canonical
checkpoint id; else ``<type> (default config)``.
Rank order: a curated list of the most-used architectures, then the rest alphabetically.
"""

from __future__ import annotations

import functools
import inspect
import re
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

from sweeper.libraries.transformers.default_config import default_config_id
from sweeper.libraries.transformers.heads import heads_of, preferred_head
from sweeper.records import ModelRef

if TYPE_CHECKING:
    from sweeper.settings.config import SweepConfig

# The architectures behind most Hub downloads (encoders, decoders, seq2seq, vision,
# speech, multimodal), so ``--top 50`` sweeps what users care about first.
POPULAR: tuple[str, ...] = (
    "bert", "xlm-roberta", "roberta", "gpt2", "llama", "t5", "vit", "clip", "whisper",
    "wav2vec2", "distilbert", "mistral", "qwen2", "qwen3", "gemma", "gemma2", "gemma3",
    "phi3", "phi", "mpnet", "bart", "deberta-v2", "albert", "electra", "mt5", "marian",
    "siglip", "dinov2", "convnext", "resnet", "swin", "beit", "deit", "detr", "segformer",
    "hubert", "wavlm", "mixtral", "qwen2_moe", "qwen3_moe", "deepseek_v3", "falcon",
    "gpt_neox", "opt", "bloom", "gptj", "mamba", "llava", "qwen2_vl", "qwen2_5_vl",
    "blip", "xlm", "camembert", "modernbert", "pegasus", "mbart", "longformer", "layoutlmv3",
    "speecht5", "bigbird_pegasus", "stablelm", "starcoder2", "olmo", "granite",
)

_DOC_CHECKPOINT = re.compile(r"\[([\w.\-]+/[\w.\-]+)\]\(https://huggingface\.co/")
# ``@auto_docstring(checkpoint="org/name")`` in the config module, when the rendered
# docstring carries no link (hand-written docstrings).
_DECORATOR_CHECKPOINT = re.compile(r"checkpoint\s*=\s*[\"']([\w.\-]+/[\w.\-]+)[\"']")


@functools.lru_cache(maxsize=1)
def zoo_types() -> tuple[str, ...]:
    """All model types with at least one model class, in rank order."""
    from transformers.models.auto.configuration_auto import CONFIG_MAPPING_NAMES

    buildable = [t for t in CONFIG_MAPPING_NAMES if preferred_head(t) is not None]
    known = set(buildable)
    first = [t for t in POPULAR if t in known]
    return tuple(first + sorted(known - set(first)))


def zoo_heads(model_type: str) -> list[str]:
    """Every head class transformers lists for ``model_type`` (base model included)."""
    seen: dict[str, None] = {}
    for classes in heads_of(model_type).values():
        seen.update(dict.fromkeys(classes))
    return list(seen)


@functools.cache
def canonical_checkpoint(model_type: str) -> str | None:
    """The checkpoint the type's config class documents as its defaults, if any."""
    from transformers.models.auto.configuration_auto import CONFIG_MAPPING

    try:
        config_class = CONFIG_MAPPING[model_type]
        doc = config_class.__doc__ or ""
        module_file = inspect.getsourcefile(config_class) or ""
    except Exception:  # noqa: BLE001 - a config module that fails to import has no doc
        return None
    match = _DOC_CHECKPOINT.search(doc)
    if match is None and module_file:
        match = _DECORATOR_CHECKPOINT.search(Path(module_file).read_text(errors="replace"))
    return match.group(1) if match else None


# Parts and variants of a type (``aimv2_vision_model``, ``qwen3_moe``) are documented with
# their family's checkpoint: these trailing words may be dropped to find the family's name.
# A version (``qwen2_5_vl``: ``vl`` is no role) never is: Qwen2-VL is not Qwen2.5-VL.
_ROLES = frozenset({"vision", "text", "audio", "video", "speech", "encoder", "decoder", "model", "moe",
                    "thinker", "tokenizer", "acoustic", "lite", "dense", "hybrid", "shared", "swa", "omni"})
_CLASS_HEAD = re.compile(r"(?:For[A-Z]\w*|Model|LMHeadModel|Config)$")


def _squash(name: str) -> str:
    return re.sub(r"[^a-z0-9]", "", name.lower())


def is_own_checkpoint(checkpoint: str, model_type: str, class_names: tuple[str, ...] = ()) -> bool:
    """Whether ``checkpoint`` is of ``model_type``: its repo name contains the type's name or
    one of its classes' (``Qwen/Qwen2-VL-7B-Instruct`` is not of ``qwen2_5_vl``; a config
    docstring sometimes names another model's checkpoint)."""
    repo = _squash(checkpoint.split("/")[-1])
    words = model_type.split("_")
    names = {_squash(model_type)}
    while len(words) > 1 and words[-1] in _ROLES:
        words = words[:-1]
        names.add(_squash("_".join(words)))
    names |= {_squash(_CLASS_HEAD.sub("", c)) for c in class_names}
    return any(len(n) >= 2 and n in repo for n in names)


def zoo_checkpoint(model_type: str, architecture: str) -> str | None:
    """The documented checkpoint of ``model_type`` when it is of that type, else ``None``."""
    from transformers.models.auto.configuration_auto import CONFIG_MAPPING_NAMES

    checkpoint = canonical_checkpoint(model_type)
    if checkpoint is None:
        return None
    classes = (architecture, CONFIG_MAPPING_NAMES.get(model_type, ""))
    return checkpoint if is_own_checkpoint(checkpoint, model_type, classes) else None


def zoo_ref(model_type: str, rank: int) -> ModelRef:
    """The ref the zoo lists for one model type at ``rank``."""
    head = preferred_head(model_type)
    if head is None:
        raise KeyError(f"model type {model_type!r} has no model class in transformers")
    architecture, task = head
    return ModelRef(
        model_id=zoo_checkpoint(model_type, architecture) or default_config_id(model_type),
        rank=rank,
        pipeline_tag=task,
        library_name="transformers",
        model_type=model_type,
        architecture=architecture,
        source="zoo",
    )


class ZooSource:
    """Lists the installed transformers' model types (no network)."""

    name = "zoo"

    def __init__(self, cfg: SweepConfig | None = None) -> None:
        self.cfg = cfg

    def refs(self) -> Iterator[ModelRef]:
        """One ref per model type, with the other libraries' entries among them, in rank
        order (lazily: ``--top N`` imports N configs)."""
        from sweeper.sources.zoo_libraries import library_ref, merged

        for rank, entry in enumerate(merged(zoo_types()), start=1):
            yield zoo_ref(entry, rank) if isinstance(entry, str) else library_ref(*entry, rank=rank)

    def describe(self) -> dict[str, str]:
        """What this source lists: the transformers version and the number of types."""
        import transformers

        return {"name": "zoo", "transformers": transformers.__version__, "model_types": str(len(zoo_types()))}


def make_zoo(cfg: SweepConfig) -> ZooSource:
    """Factory for ``--source zoo``."""
    return ZooSource(cfg)
