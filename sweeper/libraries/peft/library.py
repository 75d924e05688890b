"""peft: an adapter (LoRA, ...) on a transformers base model.

The base comes from the adapter's ``adapter_config.json`` (``base_model_name_or_path``,
the ref's config when the source carries it); offline without it, from the ref's
``model_type``. The base is built by the transformers path (tiny), then the adapter is
applied with peft's own defaults for that architecture.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from sweeper.libraries.base import Library, count_parameters
from sweeper.libraries.built import Built
from sweeper.records import ModelRef
from sweeper.settings.errors import ConfigError


def base_ref(ref: ModelRef) -> ModelRef:
    """The transformers model the adapter goes on: the ref as transformers builds it, without
    the adapter's own config (``adapter_config.json`` is not a model config)."""
    config = ref.config or {}
    return dataclasses.replace(ref, library_name="transformers", config=None if "peft_type" in config else ref.config)


class Peft(Library):
    """peft adapters on a transformers base."""

    name = "peft"
    hub_names = frozenset({"peft"})
    packages = ("peft", "transformers")

    def architecture(self, ref: ModelRef) -> str | None:
        """The base model the adapter's config names, else the ref's model type."""
        config = ref.config or {}
        return config.get("base_model_name_or_path") or ref.model_type

    def wraps(self, ref: ModelRef) -> ModelRef | None:
        """The transformers base the adapter goes on."""
        return base_ref(ref)

    def build(self, ref: ModelRef, cfg: Any) -> Built:
        """The base (tiny, transformers path) with a LoRA adapter of rank 4."""
        self.require()
        from peft import LoraConfig, get_peft_model

        from sweeper.libraries.transformers.build import build
        from sweeper.libraries.transformers.quantize_packed import before_lora

        before_lora()

        config = dict(ref.config or {})
        if not ref.model_type and "base_model_name_or_path" not in config:
            raise ConfigError(f"{ref.model_id}: the adapter's base model is not known offline (adapter_config.json needed)")
        base = build(base_ref(ref), cfg)
        lora = LoraConfig(r=4, lora_alpha=8, target_modules=config.get("target_modules"))
        try:
            model = get_peft_model(base.model, lora)
        except ValueError as exc:  # peft knows no default target modules for this architecture
            raise ConfigError(f"{ref.model_id}: LoRA does not apply to {base.architecture}: {exc}") from exc
        notes = dict(base.notes, adapter="LoRA r=4", adapter_base=self.architecture(ref) or "")
        return Built(model=model, inputs=base.inputs, architecture=f"PeftModel({base.architecture})", model_type=base.model_type,
                     num_parameters=count_parameters(model), config=base.config, has_labels=base.has_labels, notes=notes)
