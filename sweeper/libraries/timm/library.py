"""timm: image models named by the id (``timm/resnet50.a1_in1k`` -> ``resnet50``).

Tiny builds pass only the size arguments the model class's constructor accepts (a ViT of
depth 1, width 64; a ResNet, ConvNeXt or FastViT of one block per stage). Families without size
arguments (EfficientNet, MobileNetV2/V3: their entrypoints fix the block list) are built as
timm builds them and then cut to the first two blocks of each stage: the first changes
width and stride, the second is the residual repeat the rest of the stage copies, so every
kind of block (and op) stays while the graph torch.compile traces halves (EfficientNet-B3:
26 blocks -> 13).
"""

from __future__ import annotations

import contextlib
import functools
import importlib.util
import inspect
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from sweeper.libraries import vision
from sweeper.libraries.base import Library, count_parameters, seeded_build, with_loss
from sweeper.libraries.built import Built
from sweeper.records import ModelRef
from sweeper.settings.errors import ConfigError

NUM_CLASSES = 4
TINY_IMAGE = 64
# Constructor arguments that shrink a family, by the class timm builds.
TINY_ARGS: dict[str, dict[str, Any]] = {
    "VisionTransformer": {"depth": 1, "embed_dim": 64, "num_heads": 2, "img_size": TINY_IMAGE},
    "Eva": {"depth": 1, "embed_dim": 64, "num_heads": 2, "img_size": TINY_IMAGE},
    "ResNet": {"layers": (1, 1, 1, 1)},
    "ConvNeXt": {"depths": (1, 1, 1, 1), "dims": (16, 32, 64, 128)},
    "SwinTransformer": {"depths": (1, 1, 1, 1), "embed_dim": 32, "num_heads": (1, 2, 4, 8), "img_size": TINY_IMAGE, "window_size": 4},
    "MaxxVit": {"depths": (1, 1, 1, 1)},
    "FastVit": {"layers": (1, 1, 1, 1)},
}


# Classes whose ``blocks`` are stages of repeated blocks, cut to this many blocks each.
STAGED_BLOCKS = frozenset({"EfficientNet", "MobileNetV3"})
BLOCKS_PER_STAGE = 2


# ``@register_model`` entrypoints and the keys of ``register_model_deprecations`` maps:
# together, the names ``timm.is_model`` knows.
_REGISTERED = re.compile(r"^@register_model\s*\n(?:@[^\n]*\n)*def\s+(\w+)", re.M)
_DEPRECATIONS = re.compile(r"register_model_deprecations\(\s*__name__\s*,\s*\{(.*?)\}\s*\)", re.S)
_DEPRECATED_NAME = re.compile(r"""^\s*['"]([\w.-]+)['"]\s*:""", re.M)


@functools.cache
def registered_names() -> frozenset[str] | None:
    """The architecture names the installed timm registers, read from its source without
    importing it (the driver plans without torch); None when timm is not installed."""
    spec = importlib.util.find_spec("timm")
    if spec is None or not spec.submodule_search_locations:
        return None
    names: set[str] = set()
    for path in Path(spec.submodule_search_locations[0], "models").rglob("*.py"):
        source = path.read_text(encoding="utf-8", errors="replace")
        names.update(_REGISTERED.findall(source))
        for block in _DEPRECATIONS.findall(source):
            names.update(_DEPRECATED_NAME.findall(block))
    return frozenset(names)


class Timm(Library):
    """timm models (``timm.create_model``), never pretrained unless the sweep asks."""

    name = "timm"
    hub_names = frozenset({"timm"})
    packages = ("timm",)

    def architecture(self, ref: ModelRef) -> str | None:
        """The timm model name: the id's name up to its first dot (the pretrained tag after)."""
        if ref.architecture:
            return ref.architecture
        name = ref.model_id.split("/", 1)[-1].split(".", 1)[0]
        if self.missing():
            return name
        import timm

        return name if timm.is_model(name) else None

    def same_build(self, ref: ModelRef) -> Any:
        """The timm model name the id names (no timm import): tiny and random builds of two
        repos of one architecture (``resnet50.a1_in1k``, ``resnet50.tv_in1k``) are the same,
        and repos whose id names no registered architecture share one config error (each
        copy names its own repo)."""
        if ref.architecture:
            return {"timm_model": ref.architecture}
        name = ref.model_id.split("/", 1)[-1].split(".", 1)[0]
        known = registered_names()
        if known is not None and name not in known:
            return {"timm_model": None}
        return {"timm_model": name}

    def build(self, ref: ModelRef, cfg: Any) -> Built:
        """Tiny / random / pretrained (safetensors from the repo) timm model + images + labels."""
        self.require()
        import timm

        arch = self.architecture(ref)
        if arch is None:
            raise ConfigError(f"{ref.model_id}: the id names no timm architecture (the repo's config.json "
                              "'architecture' is needed, not known offline)")
        weights = cfg.materialise.weights
        notes: dict[str, Any] = {"weights": weights, "timm_model": arch}
        kwargs: dict[str, Any] = {"pretrained": False, "num_classes": NUM_CLASSES}
        if weights == "tiny":
            kwargs.update(_tiny_args(arch))
            notes["shrink"] = ",".join(sorted(k for k in kwargs if k not in ("pretrained", "num_classes"))) or "none (no size arguments)"
        elif weights == "pretrained":
            kwargs = {"pretrained": True, "pretrained_cfg_overlay": {"file": _safetensors(ref)}}
        model = seeded_build(lambda: timm.create_model(arch, **kwargs), cfg.materialise.seed)
        if weights == "tiny" and _cut_stages(model):
            notes["shrink"] = f"blocks per stage <= {BLOCKS_PER_STAGE}"
        model = model.to(vision.torch_dtype(cfg))
        size = TINY_IMAGE if weights == "tiny" else tuple(model.pretrained_cfg.get("input_size", (3, 224, 224))[1:])
        classes = getattr(model, "num_classes", NUM_CLASSES) or NUM_CLASSES
        inputs = {"x": vision.images(size, seed=cfg.materialise.seed, dtype=vision.torch_dtype(cfg)),
                  "labels": vision.labels(classes, seed=cfg.materialise.seed)}
        wrapped = with_loss(model, vision.cross_entropy, keys=("labels",))
        return Built(model=wrapped, inputs=inputs, architecture=type(model).__name__, model_type=arch,
                     num_parameters=count_parameters(model), has_labels=True, notes=notes)


def _tiny_args(arch: str, create: Any = None) -> dict[str, Any]:
    """The shrinking arguments the class behind ``arch`` accepts (found on meta: no
    memory); ``create``: the timm.create_model to use (default: timm's)."""
    import timm
    import torch

    with torch.device("meta"):
        cls = type((create or timm.create_model)(arch, pretrained=False))
    accepted = set(inspect.signature(cls.__init__).parameters)
    return {k: v for k, v in TINY_ARGS.get(cls.__name__, {}).items() if k in accepted}


def _cut_stages(model: Any) -> bool:
    """Keep the first ``BLOCKS_PER_STAGE`` blocks of each stage of a ``STAGED_BLOCKS``
    model (in place); True when something was cut. Blocks after the first keep the
    stage's width, so the stages still chain."""
    import torch

    stages = getattr(model, "blocks", None)
    if type(model).__name__ not in STAGED_BLOCKS or not isinstance(stages, torch.nn.Sequential):
        return False
    cut = False
    for i, stage in enumerate(stages):
        if isinstance(stage, torch.nn.Sequential) and len(stage) > BLOCKS_PER_STAGE:
            stages[i] = stage[:BLOCKS_PER_STAGE]
            cut = True
    return cut


@contextlib.contextmanager
def tiny_timm_builds() -> Iterator[None]:
    """While building another library's tiny model: every ``timm.create_model`` call (an
    open_clip image tower, a transformers ``TimmBackbone``) gets timm's tiny size arguments
    and stage cut. Those libraries pass only their own arguments, so a timm part would
    otherwise be built at full size (DETR's ResNet-50 backbone: 16 blocks)."""
    import timm

    original = timm.create_model

    def create(name: str, *args: Any, **kwargs: Any) -> Any:
        model = original(name, *args, **{**_tiny_args(name, original), **kwargs})
        _cut_stages(model)
        return model

    timm.create_model = create
    try:
        yield
    finally:
        timm.create_model = original


def _safetensors(ref: ModelRef) -> str:
    """The repo's model.safetensors (pretrained weights: safetensors only)."""
    from huggingface_hub import hf_hub_download

    return hf_hub_download(ref.model_id, "model.safetensors", revision=ref.revision)
