"""Depth: which layers a tiny config keeps, and the per-layer fields that follow them.

A stack whose layers are all alike keeps one: a second copy runs the same ops on the
same shapes, so it adds no verdict, only tracing (Dynamo and AOT autograd trace every
layer anew, and a tiny model's compile is mostly that: two layers of BERT or Qwen2 take
twice the compile of one). A stack whose config says its layers differ (layer kinds,
"every N-th layer" periods, offsets, index lists, per-layer values that vary) keeps
one of each kind and at least ``MAX_LAYERS``, as before.
"""

from __future__ import annotations

import re
from typing import Any

from sweeper.libraries.transformers import rules

MAX_LAYERS = 2
UNIFORM_LAYERS = 1

# Fields that make layers differ by position, besides the rule tables' index lists,
# periods and offsets. By name: layer kinds, maps, patterns and index lists (set apart
# when non-empty); "every N-th layer" periods (when N > 1); offsets and counts of the
# special layers of a stack (when not 0). Counts of other stacks (adapters, convs) are
# depths of their own, not patterns.
_PATTERN_NAME = re.compile(r"(layer|block)s?_?(types?|ids?|idxs|indices|indexes|map)|_(indices|indexes|idxs)$|pattern")
_PERIOD_NAME = re.compile(r"(layer|attn|attention|expert|moe|sparse|block|rope|cross).*(period|interval|step|every|freq)")
_OFFSET_NAME = re.compile(r"offset|first_k|start_index|end_index")
SPECIAL_LAYER_COUNTS = frozenset({
    "num_dense_layers", "num_sparse_encoder_layers", "num_sparse_decoder_layers", "num_global_layers",
    "num_first_full_attention_layers", "num_last_full_attention_layers", "insert_layer_id", "num_mem_blocks",
})
# Depth fields of the main stack that ``layer_types`` already spells out layer by layer
# (the config derives its kinds from them): with kinds present, they say nothing more.
_KINDS_SPELL_OUT = frozenset({
    "max_window_layers", "sliding_window_pattern", "_sliding_window_pattern", "global_attn_every_n_layers",
    "full_attention_interval", "no_rope_layer_interval",
})


def is_uniform(d: dict[str, Any], n: int) -> bool:
    """Whether the ``n`` layers of one (sub-)config are all alike by what it says: one
    layer kind, no index list, period, offset or pattern that sets some layers apart, no
    per-layer list whose values vary, no per-layer overrides."""
    kinds = d.get("layer_types")
    if isinstance(kinds, list) and len({str(k) for k in kinds}) > 1:
        return False
    for key, value in d.items():
        if not isinstance(key, str) or key in rules.LAYER_KEYS or key == "layer_types":
            continue
        if isinstance(value, list) and len(value) == n and n > 1 and key not in rules.STAGE_LIST_KEYS:
            if len({repr(v) for v in value}) > 1:
                return False
            continue
        if "layer" in key and isinstance(value, dict) and value and all(str(k).isdigit() for k in value):
            return False
        if isinstance(kinds, list) and key in _KINDS_SPELL_OUT:
            continue
        if _sets_layers_apart(key, value):
            return False
    return True


def _sets_layers_apart(key: str, value: Any) -> bool:
    """Whether a field, by its name and value, makes some layers differ from others."""
    if value is None or isinstance(value, (bool, float)):
        return False
    if isinstance(value, int):
        if key in rules.PERIOD_KEYS or _PERIOD_NAME.search(key):
            return value > 1
        if key in rules.OFFSET_KEYS or key in SPECIAL_LAYER_COUNTS or _OFFSET_NAME.search(key):
            return value != 0
        return False
    named = key in rules.LAYER_INDEX_KEYS or key == "attention_types" or bool(_PATTERN_NAME.search(key)) \
        or key.endswith(("_layers", "_blocks"))
    return named and (len(value) > 0 if isinstance(value, (list, tuple, str, dict)) else True)


def _kept_layers(d: dict[str, Any], n: int, limit: int = MAX_LAYERS) -> list[int]:
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
        if len(keep) >= min(limit, n):
            break
        if i not in keep:
            keep.append(i)
    return sorted(keep)


def indexes_tower_layers(d: dict[str, Any]) -> bool:
    """Whether any (sub-)config picks a tower's layers by index (``vision_feature_layer``,
    an adapter's ``vision_feature_layers``): a validator or the forward may need the index
    to name a layer that is not the tower's only one."""
    for key, value in d.items():
        if isinstance(value, dict):
            if indexes_tower_layers(value):
                return True
        elif isinstance(key, str) and key in FEATURE_LAYER_KEYS and value not in (None, [], ()):
            return True
    return False


def shrink_layers(d: dict[str, Any], *, alike_keep: int = UNIFORM_LAYERS) -> None:
    """Cut each depth key of one (sub-)config dict in place; per-layer lists and
    overrides keep the kept layers, index lists follow them. A stack of alike layers
    keeps ``alike_keep`` of them; one whose layers differ, one of each kind and at
    least ``MAX_LAYERS``."""
    staged = any(isinstance(d.get(k), list) for k in rules.STAGE_LIST_KEYS)
    as_given = dict(d)  # each depth judged on the fields as the config gave them
    for key in rules.LAYER_KEYS:
        n = d.get(key)
        if not isinstance(n, int) or isinstance(n, bool):
            continue
        # Staged (hierarchical) configs keep their stage count: a stage is no copy.
        limit = alike_keep if not staged and is_uniform(as_given, n) else MAX_LAYERS
        if n <= limit:
            continue
        if staged and key in rules.MAIN_LAYER_KEYS:
            continue  # with per-stage depths, the layer count is the number of stages
        keep = _kept_layers(d, n, limit) if key in rules.MAIN_LAYER_KEYS else list(range(limit))
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
            elif other in rules.LAYER_INDEX_KEYS and other != "out_indices" and value and all(isinstance(v, int) for v in value):
                # (An empty list sets no layer apart and stays empty: kept as [0] it made the
                # only kept layer of a mixture-of-experts stack a dense one.)
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


# Fields by which one config picks layers of a tower by index; the first two are clamped
# to the shrunk depth, as before; the others are left as the config gives them.
CLAMPED_FEATURE_LAYER_KEYS = ("vision_feature_layer", "vision_feature_layers")
FEATURE_LAYER_KEYS = (*CLAMPED_FEATURE_LAYER_KEYS, "feature_layer", "select_layer")


def _clamp_feature_layers(d: dict[str, Any]) -> None:
    """Vision feature layers named by a sibling config (an adapter's) index a tower that
    now has at most MAX_LAYERS layers; negative (from the end) indices still fit."""
    for key in CLAMPED_FEATURE_LAYER_KEYS:
        value = d.get(key)
        if isinstance(value, int) and not isinstance(value, bool) and value >= MAX_LAYERS:
            d[key] = MAX_LAYERS - 1
        elif isinstance(value, list) and all(isinstance(v, int) for v in value):
            d[key] = [min(v, MAX_LAYERS - 1) for v in value]


def _index_key(old: Any, new: int) -> Any:
    """A layer index key in the original's form ("05" stays zero-padded, ints stay ints)."""
    return new if isinstance(old, int) else f"{new:0{len(old)}d}"
