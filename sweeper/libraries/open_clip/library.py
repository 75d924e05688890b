"""open_clip: CLIP-style image + text towers, named through open_clip's own pretrained
registry (a Hub id is the ``hf_hub`` of one of its (model, tag) pairs).

Tiny builds shrink the named config (1 layer, width 64, context 16, small vocabulary);
an image tower that is a timm model is shrunk with the timm library's own size arguments.
The loss is open_clip's own (ClipLoss, or SigLipLoss for the sigmoid models).
"""

from __future__ import annotations

import contextlib
import copy
import functools
from collections.abc import Iterator
from typing import Any

from sweeper.libraries import vision
from sweeper.libraries.base import Library, count_parameters, seeded_build, with_loss
from sweeper.libraries.built import Built
from sweeper.libraries.open_clip.text import TEXT_TOWERS, offline_text_towers
from sweeper.records import ModelRef
from sweeper.settings.errors import ConfigError

TINY_IMAGE = 64
# Hub repos outside open_clip's pretrained registry whose open_clip_config.json (not read
# offline) is a registry config, with the evidence. Marqo's fashion SigLIP is fine-tuned from
# ViT-B-16-SigLIP; the listing's parameter count, 203,155,968, is that config's exactly less
# its two scalars (logit_scale, logit_bias).
REPO_CONFIGS: dict[str, str] = {"marqo/marqo-fashionsiglip": "ViT-B-16-SigLIP"}
CONTEXT = 16
VOCAB = 1000


class OpenClip(Library):
    """open_clip models, built with ``open_clip.create_model(name, pretrained=None)``."""

    name = "open_clip"
    hub_names = frozenset({"open_clip"})
    packages = ("open_clip", "timm")

    def architecture(self, ref: ModelRef) -> str | None:
        """The open_clip model name whose pretrained registry points at this repo."""
        if ref.architecture:
            return ref.architecture
        if self.missing():
            return None
        return hub_names().get(ref.model_id.lower()) or REPO_CONFIGS.get(ref.model_id.lower())

    def same_build(self, ref: ModelRef) -> Any:
        """The open_clip model name the repo is (None: the same config error, each copy naming
        its own repo), and whether it came from the table of repo configs (a note)."""
        return {"open_clip_model": self.architecture(ref), "repo_table": ref.model_id.lower() in REPO_CONFIGS}

    def build(self, ref: ModelRef, cfg: Any) -> Built:
        """Tiny / random / pretrained open_clip model + images + token ids."""
        self.require()
        import open_clip

        name = self.architecture(ref)
        if name is None:
            raise ConfigError(f"{ref.model_id}: not in open_clip's pretrained registry (its open_clip_config.json is "
                              "needed, not known offline)")
        weights = cfg.materialise.weights
        model_cfg = copy.deepcopy(open_clip.get_model_config(name))
        hf_text = model_cfg.get("text_cfg", {}).get("hf_model_name")
        if hf_text and weights != "pretrained" and hf_text not in TEXT_TOWERS:
            raise ConfigError(f"{ref.model_id}: its text tower is the transformers model {hf_text!r}, whose config "
                              "is not known offline")
        notes: dict[str, Any] = {"weights": weights, "open_clip_model": name}
        if ref.model_id.lower() in REPO_CONFIGS and weights != "pretrained":
            notes["open_clip_model_source"] = "sweeper's table of repo configs (not in open_clip's registry)"
        if hf_text:
            notes["text_tower"] = f"transformers {hf_text} (released config from sweeper's table)"
        overrides = _tiny(model_cfg) if weights == "tiny" else {}
        if hf_text and weights != "pretrained":  # open_clip would load the tower's Hub weights
            overrides.setdefault("text_cfg", dict(model_cfg["text_cfg"]))["hf_model_pretrained"] = False
        pretrained = f"hf-hub:{ref.model_id}" if weights == "pretrained" else None
        with _tiny_timm(weights == "tiny"), offline_text_towers(tiny=weights == "tiny"):
            model = seeded_build(lambda: open_clip.create_model(pretrained or name, pretrained=None, output_dict=True,
                                                                **overrides), cfg.materialise.seed)
        model = model.to(vision.torch_dtype(cfg))
        size = TINY_IMAGE if weights == "tiny" else model.visual.image_size
        context = overrides.get("text_cfg", model_cfg.get("text_cfg", {})).get("context_length", 77)
        vocab = overrides.get("text_cfg", model_cfg.get("text_cfg", {})).get("vocab_size", 49408)
        if hf_text:  # a transformers tower: its own vocabulary (shrunk when tiny)
            vocab = min(vocab, model.text.config.vocab_size)
        import torch

        gen = torch.Generator().manual_seed(cfg.materialise.seed)
        inputs = {"image": vision.images(size, seed=cfg.materialise.seed, dtype=vision.torch_dtype(cfg)),
                  "text": torch.randint(1, vocab, (vision.BATCH, min(context, CONTEXT)), generator=gen)}
        sigmoid = "init_logit_bias" in model_cfg
        wrapped = with_loss(model, _siglip_loss if sigmoid else _clip_loss)
        notes["loss"] = "SigLipLoss" if sigmoid else "ClipLoss"
        return Built(model=wrapped, inputs=inputs, architecture=type(model).__name__, model_type=name,
                     num_parameters=count_parameters(model), has_labels=True, notes=notes)


@functools.cache
def hub_names() -> dict[str, str]:
    """Hub repo id (lower case) -> open_clip model name, from open_clip's registry."""
    from open_clip import pretrained

    found: dict[str, str] = {}
    for name, tags in pretrained._PRETRAINED.items():
        for tag_cfg in tags.values():
            hub = (tag_cfg.get("hf_hub") or "").strip("/").lower()
            if hub:
                found.setdefault(hub, name)
    return found


def _tiny(model_cfg: dict[str, Any]) -> dict[str, Any]:
    """Overrides for ``create_model``: the config's towers shrunk, kinds of layers kept."""
    vision_cfg = dict(model_cfg.get("vision_cfg", {}), image_size=TINY_IMAGE)
    if "timm_model_name" in vision_cfg:
        vision_cfg["timm_model_pretrained"] = False
    else:
        vision_cfg.update(layers=1, width=64, head_width=32, patch_size=16)
        if isinstance(model_cfg["vision_cfg"].get("layers"), (list, tuple)):  # a ModifiedResNet tower
            vision_cfg.update(layers=(1, 1, 1, 1), width=16)
    text_cfg = dict(model_cfg.get("text_cfg", {}), layers=1, width=64, heads=2, context_length=CONTEXT, vocab_size=VOCAB)
    # A timm tower without a projection hands its own width on: the shared width must be it.
    no_proj = "timm_model_name" in vision_cfg and vision_cfg.get("timm_proj") in (None, "none", "")
    return {"embed_dim": 64 if no_proj else 32, "vision_cfg": vision_cfg, "text_cfg": text_cfg}


@contextlib.contextmanager
def _tiny_timm(active: bool) -> Iterator[None]:
    """While building: timm image towers get timm's tiny size arguments (open_clip passes
    only its own, so a timm tower would otherwise be built at full size)."""
    if not active:
        yield
        return
    from sweeper.libraries.timm.library import tiny_timm_builds

    with tiny_timm_builds():
        yield


def _clip_loss(output: dict[str, Any], targets: dict[str, Any]) -> Any:
    from open_clip.loss import ClipLoss

    return ClipLoss()(output["image_features"], output["text_features"], output["logit_scale"])


def _siglip_loss(output: dict[str, Any], targets: dict[str, Any]) -> Any:
    from open_clip.loss import SigLipLoss

    return SigLipLoss()(output["image_features"], output["text_features"], output["logit_scale"], output["logit_bias"])
