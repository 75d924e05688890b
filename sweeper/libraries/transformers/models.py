"""Pick the head class for a ref and build it (on ``meta`` to count, on the CPU to run)."""

from __future__ import annotations

import contextlib
from typing import Any

from sweeper.libraries.transformers.heads import head_for_task, heads_of, preferred_head
from sweeper.records import ModelRef
from sweeper.settings.errors import ConfigError, RemoteCodeError

_DTYPES = {"float32": "float32", "bfloat16": "bfloat16", "float16": "float16"}


def transformers_class(name: str, model_type: str | None = None) -> type | None:
    """The class ``transformers.<name>`` (or from the type's modeling module when the
    top-level package does not export it), or None when the installed version lacks it."""
    import importlib

    import transformers

    try:
        return getattr(transformers, name)
    except (AttributeError, ImportError, RuntimeError):
        pass
    if not model_type:
        return None
    from transformers.models.auto.configuration_auto import model_type_to_module_name

    try:
        return getattr(importlib.import_module(f"transformers.models.{model_type_to_module_name(model_type)}"), name)
    except (AttributeError, ImportError, RuntimeError):
        return None


def choose_head(ref: ModelRef, config: Any) -> str:
    """The class name to build: ref.architecture, config.architectures, pipeline_tag, base.

    Raises RemoteCodeError when the only candidates live in the checkpoint's own code
    (``auto_map``), ConfigError when nothing in transformers matches the model type.
    """
    model_type = getattr(config, "model_type", None) or ref.model_type or ""
    candidates: list[str] = []
    if ref.architecture:
        candidates.append(ref.architecture)
    candidates.extend(getattr(config, "architectures", None) or [])
    tagged = head_for_task(model_type, ref.pipeline_tag)
    if tagged:
        candidates.append(tagged)
    base = heads_of(model_type).get("")
    if base:
        candidates.append(base[0])
    # A type served only by a rarer mapping (matting, pose estimation, image-to-text)
    # takes the zoo's head; a type in no auto mapping at all (retrieval-augmented
    # generators) takes the models its own modeling module defines for its config.
    zoo_head = preferred_head(model_type)
    if zoo_head:
        candidates.append(zoo_head[0])
    candidates.extend(module_classes(model_type))
    for name in candidates:
        if transformers_class(name, model_type) is not None:
            return name
    names = ", ".join(dict.fromkeys(candidates)) or "no class"
    if getattr(config, "auto_map", None):
        raise RemoteCodeError(f"{names} is not in transformers {_version()}; it needs the checkpoint's own code")
    raise ConfigError(f"transformers {_version()} defines no model class for {model_type!r} (looked for {names})")


def module_classes(model_type: str) -> list[str]:
    """Model classes the type's modeling module defines for its config class (heads
    first, the abstract ``*PreTrainedModel`` left out), in definition order."""
    import importlib

    from transformers import PreTrainedModel
    from transformers.models.auto.configuration_auto import CONFIG_MAPPING, model_type_to_module_name

    if not model_type or model_type not in CONFIG_MAPPING:
        return []
    try:
        module = importlib.import_module(
            f"transformers.models.{model_type_to_module_name(model_type)}.modeling_{model_type_to_module_name(model_type)}"
        )
    except (ImportError, RuntimeError):
        return []
    config_class = CONFIG_MAPPING[model_type]
    found = [
        name for name, obj in vars(module).items()
        if isinstance(obj, type) and issubclass(obj, PreTrainedModel) and obj.__module__ == module.__name__
        and getattr(obj, "config_class", None) is config_class and not name.endswith("PreTrainedModel")
    ]
    # Heads (``...For...``) before bare models: they carry a loss.
    return sorted(found, key=lambda name: "For" not in name)


def _version() -> str:
    import transformers

    return transformers.__version__


def count_on_meta(cls: type, config: Any) -> int:
    """Build the model on the ``meta`` device (no memory) and count its parameters."""
    import torch

    with torch.device("meta"), _quiet():
        model = cls._from_config(config)
    return sum(p.numel() for p in model.parameters())


def build_model(cls: type, config: Any, *, seed: int, dtype: str) -> Any:
    """Build the model for real with random init, seeded, in ``dtype``, in eval mode.

    Eval mode keeps dropout off so the device/CPU comparison is deterministic; gradients
    still flow, so the backward stage runs on the same module.
    """
    import torch

    torch.manual_seed(seed)
    with _quiet():
        model = cls._from_config(config, dtype=getattr(torch, _DTYPES[dtype]))
    model.eval()
    return model


@contextlib.contextmanager
def _quiet():
    """Silence transformers' init warnings (they repeat for every model in a sweep)."""
    from transformers.utils import logging

    level = logging.get_verbosity()
    logging.set_verbosity_error()
    try:
        yield
    finally:
        logging.set_verbosity(level)
