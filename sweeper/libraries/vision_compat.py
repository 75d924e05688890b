"""Make PyPI's torchvision importable beside the CPU torch the project pins.

PyPI's torchvision wheels are CUDA builds: beside the CPU torch their C++ extension
(``torchvision/_C.so``) fails to load, and torchvision's own import then dies on
``torch.library.register_fake("torchvision::nms")`` — an operator that only the extension
defines. Once torchvision is installed, transformers imports it for many model classes,
so every such ``from transformers import ...`` fails too (and timm and open_clip cannot
import at all).

The fix here: before torchvision is first imported, try its extension; when it does not
load, define the operator schemas its Python parts expect, with a pure-PyTorch
``torchvision::nms`` and a clear error for ``qnms``. The rest of torchvision's detection
ops (roi_align has torchvision's own Python fallback; roi_pool, ps_roi_*, deform_conv2d)
raise torchvision's "Couldn't load custom C++ ops" when called, as without the fix.

``install()`` puts a one-shot finder on ``sys.meta_path`` (``sweeper/__init__`` calls it)
so the definitions run in every process that imports sweeper, before whatever imports
torchvision first (transformers, timm, open_clip, diffusers) — and cost nothing (no torch
import) in a process that never imports torchvision.
"""

from __future__ import annotations

import importlib.abc
import importlib.util
import sys
from pathlib import Path
from typing import Any

# "native" (the extension loaded), "compat" (schemas defined here), "absent" (no
# torchvision), or None (not decided yet: torchvision not imported).
state: str | None = None
_LIB: Any = None  # the torch.library.Library; kept alive, or its definitions vanish

_SCHEMAS = {
    "nms": "nms(Tensor dets, Tensor scores, float iou_threshold) -> Tensor",
    "qnms": "qnms(Tensor dets, Tensor scores, float iou_threshold) -> Tensor",
}


def nms(dets: Any, scores: Any, iou_threshold: float) -> Any:
    """Non-maximum suppression in plain PyTorch: indices of the boxes kept, by descending
    score (torchvision's semantics: drop a box whose IoU with a kept one is > threshold)."""
    import torch

    order = scores.argsort(descending=True, stable=True)
    boxes = dets[order].float()
    areas = (boxes[:, 2] - boxes[:, 0]).clamp(min=0) * (boxes[:, 3] - boxes[:, 1]).clamp(min=0)
    lt = torch.maximum(boxes[:, None, :2], boxes[None, :, :2])
    rb = torch.minimum(boxes[:, None, 2:], boxes[None, :, 2:])
    inter = (rb - lt).clamp(min=0).prod(dim=2)
    iou = inter / (areas[:, None] + areas[None, :] - inter)
    suppressed = torch.zeros(len(order), dtype=torch.bool)
    keep = []
    for i in range(len(order)):  # greedy by design: each kept box suppresses later ones
        if suppressed[i]:
            continue
        keep.append(i)
        suppressed |= iou[i] > iou_threshold
    return order[torch.tensor(keep, dtype=torch.long, device=order.device)] if keep else order[:0]


def _qnms(dets: Any, scores: Any, iou_threshold: float) -> Any:
    raise NotImplementedError(
        "torchvision::qnms needs torchvision's C++ extension, which does not load beside this torch "
        "(a CUDA torchvision wheel beside the CPU torch); only torchvision::nms has a PyTorch fallback"
    )


def _extension(spec: Any) -> Path | None:
    for folder in spec.submodule_search_locations or ():
        for found in sorted(Path(folder).glob("_C*.so")) + sorted(Path(folder).glob("_C*.pyd")):
            return found
    return None


def define_ops() -> str:
    """Load torchvision's extension, or define the schemas its Python parts need; returns
    the resulting ``state``. Idempotent."""
    global state, _LIB
    if state is not None:
        return state
    spec = importlib.util.find_spec("torchvision")
    if spec is None:
        state = "absent"
        return state
    import torch

    path = _extension(spec)
    try:
        if path is None:
            raise OSError("no torchvision/_C extension")
        torch.ops.load_library(str(path))
        state = "native"
        return state
    except (OSError, ImportError, RuntimeError):
        pass  # the usual case with a CUDA wheel beside the CPU torch: define the schemas
    lib = torch.library.Library("torchvision", "DEF")
    for schema in _SCHEMAS.values():
        lib.define(schema)
    lib.impl("nms", nms, "CompositeExplicitAutograd")
    lib.impl("qnms", _qnms, "CompositeExplicitAutograd")
    _LIB = lib
    state = "compat"
    return state


class _BeforeTorchvision(importlib.abc.MetaPathFinder):
    """Runs ``define_ops`` the first time anything imports torchvision, then leaves."""

    def find_spec(self, name: str, path: Any = None, target: Any = None) -> None:
        if name == "torchvision":
            uninstall()
            define_ops()
        return None  # the ordinary finders import torchvision itself


_FINDER = _BeforeTorchvision()


def install() -> None:
    """Arrange for ``define_ops`` to run before torchvision's first import (or now, when
    torchvision is already imported by the time sweeper is)."""
    if "torchvision" in sys.modules:
        return
    if _FINDER not in sys.meta_path:
        sys.meta_path.insert(0, _FINDER)


def uninstall() -> None:
    """Remove the finder (``define_ops`` already ran or is no longer wanted)."""
    if _FINDER in sys.meta_path:
        sys.meta_path.remove(_FINDER)
