"""``Built``: what materialising one model hands to the stages."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass
class Built:
    """A model ready to run on the CPU, with the keyword inputs its forward takes."""

    model: Any  # torch.nn.Module
    inputs: dict[str, Any]  # CPU tensors (and plain values) for model(**inputs)
    architecture: str  # the class built, e.g. "BertForMaskedLM"
    model_type: str | None
    num_parameters: int
    config: Any = None  # the transformers config used
    # Whether ``inputs`` carry labels, so the output has the model's own loss.
    has_labels: bool = False
    notes: dict[str, Any] = field(default_factory=dict)
    # A model that is several (a diffusers pipeline): each component, by name, checked on
    # its own through every stage; empty for a model that is one.
    components: dict[str, Built] = field(default_factory=dict)
    # A pipeline's sampling entry (``sample(device, compile_backend=..., seed=...)`` -> images,
    # ``describe()``): the generate stage calls it; None where the library has none.
    sample: Any = None
    # A quantized repo's method as built (``sweeper.libraries.quantization``); empty when plain.
    quantization: dict[str, Any] = field(default_factory=dict)
