"""Depth: which layers a tiny config keeps, and the per-layer fields that follow them."""

from __future__ import annotations

from typing import Any

from sweeper.libraries.transformers import rules

MAX_LAYERS = 2


def _kept_layers(d: dict[str, Any], n: int) -> list[int]:
    """Indices of the layers to keep: one of each distinct layer type, at most a few."""
    kinds = d.get("layer_types")
    keep: list[int] = []
    if isinstance(kinds, list) and len(kinds) == n:
        seen: set[str] = set()
        for i, kind in enumerate(kinds):
            if str(kind) not in seen:
                seen.add(str(kind))
                keep.append(i)
    for i in range(n):
        if len(keep) >= min(MAX_LAYERS, n):
            break
        if i not in keep:
            keep.append(i)
    return sorted(keep)


def shrink_layers(d: dict[str, Any]) -> None:
    """Cut each depth key of one (sub-)config dict in place; per-layer lists and
    overrides keep the kept layers, index lists follow them."""
    staged = any(isinstance(d.get(k), list) for k in rules.STAGE_LIST_KEYS)
    for key in rules.LAYER_KEYS:
        n = d.get(key)
        if not isinstance(n, int) or isinstance(n, bool) or n <= MAX_LAYERS:
            continue
        if staged and key in rules.MAIN_LAYER_KEYS:
            continue  # with per-stage depths, the layer count is the number of stages
        keep = _kept_layers(d, n) if key in rules.MAIN_LAYER_KEYS else list(range(MAX_LAYERS))
        if key in rules.MAIN_LAYER_KEYS:
            keep = _keep_outputs(d, keep)
        d[key] = len(keep)
        new_index = {old: new for new, old in enumerate(keep)}
        for other, value in list(d.items()):
            if other == key:
                continue
            if "layer" in other and isinstance(value, dict) and value and all(str(k).isdigit() for k in value):
                # Per-layer overrides keyed by layer index follow the kept layers.
                d[other] = {_index_key(k, new_index[int(k)]): v for k, v in value.items() if int(k) in new_index}
                continue
            if not isinstance(value, list):
                continue
            if len(value) == n and other not in rules.STAGE_LIST_KEYS:
                d[other] = [value[i] for i in keep]
            elif other in rules.LAYER_INDEX_KEYS and other != "out_indices" and all(isinstance(v, int) for v in value):
                d[other] = [new_index[v] for v in value if v in new_index] or [len(keep) - 1]
    for key in rules.PERIOD_KEYS:
        if isinstance(d.get(key), int) and d[key] > MAX_LAYERS:
            d[key] = MAX_LAYERS
    for key in rules.OFFSET_KEYS:
        if isinstance(d.get(key), int) and d[key] >= MAX_LAYERS:
            d[key] = MAX_LAYERS - 1
    for key in rules.STAGE_LIST_KEYS:
        if isinstance(d.get(key), list) and all(isinstance(v, int) for v in d[key]):
            d[key] = [min(v, 1) for v in d[key]]
    for key in rules.REPEAT_LIST_KEYS:
        if isinstance(d.get(key), list) and all(isinstance(v, int) for v in d[key]):
            d[key] = [min(v, MAX_LAYERS) for v in d[key]]
    for key in rules.DEPTH_SCALE_KEYS:
        if isinstance(d.get(key), (int, float)) and d[key] > 1:
            d[key] = 1.0
    for key in ("out_features", "stage_names"):
        d.pop(key, None)  # regenerated from out_indices and the new depth
    _clamp_feature_layers(d)


# Layer indices whose features a head reads, one feature map per index (its neck or
# decoder has one input per entry, so their count must survive the shrink). Backbone
# ``out_indices`` count the stem as 0; ``backbone_out_indices`` index the layers.
OUTPUT_INDEX_KEYS = ("out_indices", "backbone_out_indices")


def _keep_outputs(d: dict[str, Any], keep: list[int]) -> list[int]:
    """Keep as many layers as requested outputs, each output on its own layer."""
    for key in OUTPUT_INDEX_KEYS:
        outputs = d.get(key)
        if not (isinstance(outputs, list) and outputs and all(isinstance(v, int) for v in outputs)
                and min(outputs) >= 0):
            continue
        count = max(len(keep), len(outputs))
        keep = list(range(count))
        if key == "out_indices":
            # Backbone stage names count the stem as 0: outputs are 1-based layers.
            first = 0 if min(outputs) == 0 else count - len(outputs) + 1
        else:
            first = count - len(outputs)  # 0-based layer indices: the last layers
        d[key] = list(range(first, first + len(outputs)))
    return keep


def _clamp_feature_layers(d: dict[str, Any]) -> None:
    """Vision feature layers named by a sibling config (an adapter's) index a tower that
    now has at most MAX_LAYERS layers; negative (from the end) indices still fit."""
    for key in ("vision_feature_layer", "vision_feature_layers"):
        value = d.get(key)
        if isinstance(value, int) and not isinstance(value, bool) and value >= MAX_LAYERS:
            d[key] = MAX_LAYERS - 1
        elif isinstance(value, list) and all(isinstance(v, int) for v in value):
            d[key] = [min(v, MAX_LAYERS - 1) for v in value]


def _index_key(old: Any, new: int) -> Any:
    """A layer index key in the original's form ("05" stays zero-padded, ints stay ints)."""
    return new if isinstance(old, int) else f"{new:0{len(old)}d}"
