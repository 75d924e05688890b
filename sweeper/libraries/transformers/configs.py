"""Shrink a real config to a tiny one with the same structure (``--weights tiny``).

Works on ``config.to_dict()``: every nested sub-config (text, vision, audio, backbone,
...) is walked and shrunk by the same key rules, then the config is rebuilt with
``from_dict`` so derived fields are recomputed. Only sizes change: depth, heads, widths,
experts, vocabulary and image sizes. Structural flags (attention type, rope scaling, tied
embeddings, layer types) are left as they are.

The rules are tables of key names (what a size is called across configs), not model
names; per-layer lists and layer-index lists follow the kept layers.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from typing import Any

from sweeper.libraries.transformers import rules
from sweeper.libraries.transformers.layers import MAX_LAYERS, UNIFORM_LAYERS, indexes_tower_layers, shrink_layers

MAX_HEADS = 4
MAX_IMPLIED_HEAD_DIM = 128
MAX_EXPERTS = 4
MAX_TOP_K = 2
TINY_VOCAB = 1024
# Compacted special token ids land here, below the tiny vocab, above sampled input ids.
SPECIAL_ID_BASE = 900
# The placeholder id given to image tokens a default config leaves unset: the last
# slot of the tiny vocab, clear of compacted special ids and of sampled ids.
UNSET_IMAGE_TOKEN = TINY_VOCAB - 1
MAX_IMAGE = 256
SHRUNK_IMAGE = 224
# Position tables (and the causal masks some models register at max_positions²) shrink to
# this; far above any sequence the sweep feeds.
MAX_POSITIONS = 2048
POSITION_KEYS = ("max_position_embeddings", "n_positions", "n_ctx")

# Ladder levels, most aggressive first, with what each shrinks: when a level's model
# fails to build or to run, the next changes less (the failure may come from a field
# linked to the vocab or to a width that no rule knows).
LEVEL_PARTS: dict[str, frozenset[str]] = {
    "tiny": frozenset({"widths", "experts", "images", "vocab", "positions"}),
    "keep_vocab": frozenset({"widths", "experts", "images", "positions"}),
    "keep_width": frozenset({"experts", "images", "vocab", "positions"}),
    "layers_only": frozenset(),
}
LEVELS: tuple[str, ...] = tuple(LEVEL_PARTS)


@dataclass
class _Remap:
    """What the walk learned that applies across sub-configs (ids, widths)."""

    level: str
    special_ids: dict[int, int] = field(default_factory=dict)
    widths: dict[int, int] = field(default_factory=dict)
    # (id of the dict, key) already set by a width rule: the by-value pass leaves them.
    touched: set[tuple[int, str]] = field(default_factory=set)
    # Old width -> new width of the (sub-)configs with attention heads, planned before
    # the walk: a headless config repeating such a width by value (a multimodal
    # wrapper's hidden size, a projector's output) takes the same new width.
    head_widths: dict[int, int] = field(default_factory=dict)
    # Side of the image before and after the shrink, when one was shrunk: feature-map
    # sizes a sibling config states by value (``backbone_feature_sizes``) follow it.
    image_sides: tuple[int, int] | None = None
    # A sibling config picks vision-tower layers by index (``vision_feature_layer``):
    # vision towers then keep their depth of several layers even when all alike.
    towers_indexed: bool = False
    alike_keep: int = UNIFORM_LAYERS


def shrink_config_dict(data: dict[str, Any], level: str = "tiny", *, alike_keep: int = UNIFORM_LAYERS) -> dict[str, Any]:
    """Return a shrunk copy of a config dict (``to_dict()`` / Hub config.json shape).
    A stack of alike layers keeps ``alike_keep`` of them (``layers``)."""
    out = copy.deepcopy(data)
    remap = _Remap(level=level, alike_keep=alike_keep)
    parts = LEVEL_PARTS[level]
    if "vocab" in parts:
        _collect_special_ids(out, remap)
    if "widths" in parts:
        _plan_head_widths(out, remap)
    remap.towers_indexed = indexes_tower_layers(out)
    _walk(out, remap)
    if "widths" in parts:
        _apply_widths(out, remap)
        _link_tower_outputs(out)
    if "images" in parts:
        _scale_pinpoints(out)
        _scale_feature_sizes(out, remap)
    return out


# Feature-map sizes some vision configs state beside the image size they follow (SAM 2's
# neck reads its backbone's maps as ``backbone_feature_sizes`` = image / 4, / 8, / 16).
FEATURE_SIZE_SUFFIX = "feature_sizes"


def _scale_feature_sizes(d: dict[str, Any], remap: _Remap) -> None:
    """Scale stated feature-map sizes by the image shrink: left at the full image's, the
    model builds but its neck expects maps the shrunk image does not give, and the ladder
    falls back to the full image (SAM 2: 1024² inputs, a 16 s forward, a backward past the
    memory limit)."""
    if remap.image_sides is None:
        return
    old, new = remap.image_sides
    for key, value in list(d.items()):
        if isinstance(value, dict):
            _scale_feature_sizes(value, remap)
        elif isinstance(key, str) and key.endswith(FEATURE_SIZE_SUFFIX) and isinstance(value, list) and value and \
                all(isinstance(v, list) and all(isinstance(x, int) and not isinstance(x, bool) for x in v) for v in value):
            d[key] = [[max(1, x * new // old) for x in v] for v in value]


def _scale_pinpoints(d: dict[str, Any]) -> None:
    """Any-resolution grids (``image_grid_pinpoints``) are multiples of the vision tower's
    tile; when the tile shrinks, the grid follows, or crops and grid stop lining up."""
    pinpoints, vision = d.get("image_grid_pinpoints"), d.get("vision_config")
    if not (isinstance(pinpoints, list) and pinpoints and isinstance(vision, dict)):
        return
    size = vision.get("image_size")
    flat = [v for point in pinpoints if isinstance(point, list) for v in point]
    if not isinstance(size, int) or not flat or not all(isinstance(v, int) and v > 0 for v in flat):
        return
    tile = min(flat)
    if size < tile and all(v % tile == 0 for v in flat):
        d["image_grid_pinpoints"] = [[v // tile * size for v in point] for point in pinpoints]


# Fields naming the width a vision tower hands to the text model (its merger's output).
TOWER_OUTPUT_KEYS = ("out_hidden_size",)


def _link_tower_outputs(d: dict[str, Any]) -> None:
    """A vision tower's output width is the text model's width: the tower's features are
    scattered into the text embeddings. Real checkpoints agree; some default configs do
    not (a 3584-wide merger beside an 8192-wide text model), and shrunk they would stay
    unable to take an image."""
    text, vision = d.get("text_config"), d.get("vision_config")
    if isinstance(text, dict) and isinstance(vision, dict):
        width = text.get("hidden_size")
        for key in TOWER_OUTPUT_KEYS:
            if isinstance(vision.get(key), int) and isinstance(width, int):
                vision[key] = width
    for value in d.values():
        if isinstance(value, dict) and _is_sub_config(value):
            _link_tower_outputs(value)


def config_to_dict(config: Any) -> dict[str, Any]:
    """``config.to_dict()`` without derived fields, so ``from_dict`` recomputes them.

    Dataclass configs serialise values their ``__post_init__`` derives (per-stage widths,
    linear-attention heads, alias keys); passed back stale, they would override the
    shrunk sizes they derive from.
    """
    data = config.to_dict()
    pruned = copy.deepcopy(data)
    _prune_derived(config, pruned)
    try:
        rebuilt = type(config).from_dict(copy.deepcopy(pruned)).to_dict()
    except Exception:  # noqa: BLE001 - keep everything when the class cannot round-trip
        return data
    _restore_missing(data, pruned, rebuilt)
    return pruned


def _restore_missing(full: dict[str, Any], pruned: dict[str, Any], rebuilt: dict[str, Any]) -> None:
    """Put back the dropped fields the class does not recompute to the same value."""
    for key, value in full.items():
        if isinstance(value, dict) and isinstance(pruned.get(key), dict):
            _restore_missing(value, pruned[key], rebuilt.get(key) or {})
        elif key not in pruned and (key not in rebuilt or rebuilt[key] != value):
            pruned[key] = value


def _prune_derived(config: Any, data: dict[str, Any]) -> None:
    import dataclasses

    if dataclasses.is_dataclass(config):
        aliases = getattr(config, "attribute_map", {}) or {}
        names = {f.name for f in dataclasses.fields(config)} | set(aliases) | set(aliases.values())
        for key in list(data):
            if key not in names and key != "model_type" and not key.startswith("_") and not isinstance(data[key], dict):
                del data[key]
    for key, value in data.items():
        try:
            sub = getattr(config, key, None)
        except Exception:  # noqa: BLE001 - per-layer attributes refuse global access
            continue
        if isinstance(value, dict) and hasattr(sub, "to_dict") and sub is not config:
            _prune_derived(sub, value)


def _fill_unset(d: dict[str, Any]) -> None:
    """Sizes a model needs that a default config leaves None (real checkpoints set
    them): a text stack's vocabulary, the experts each token is routed to. Without
    them the default builds no model or routes to ``top_k=None`` experts."""
    if any(isinstance(d.get(k), int) for k in rules.HIDDEN_KEYS) and "vocab_size" in d and d["vocab_size"] is None:
        d["vocab_size"] = TINY_VOCAB
        # Such a placeholder vocabulary names no padding id either; embeddings that
        # derive positions from the padding read one. Sampled ids start above it.
        if "pad_token_id" in d and d["pad_token_id"] is None:
            d["pad_token_id"] = 0
    if isinstance(d.get("num_query_tokens"), int):
        # A query-token bridge (Q-Former) scatters its queries into the text at image
        # placeholders; a default naming no placeholder id matches none (``ids == None``).
        for key in ("image_token_index", "image_token_id"):
            if key in d and d[key] is None:
                d[key] = UNSET_IMAGE_TOKEN
    if any(isinstance(d.get(k), int) and d[k] > 1 for k in rules.EXPERT_KEYS):
        for key in rules.TOP_K_KEYS:
            if key in d and d[key] is None:
                d[key] = MAX_TOP_K


def _walk(d: dict[str, Any], remap: _Remap, name: str = "") -> None:
    """Shrink one (sub-)config dict (``name``: its key in the parent), then its nested
    sub-configs."""
    _fill_unset(d)
    rules.apply_layer_rules(d)
    shrink_layers(d, alike_keep=MAX_LAYERS if remap.towers_indexed and _is_vision_tower(name) else remap.alike_keep)
    parts = LEVEL_PARTS[remap.level]
    if "widths" in parts:
        _shrink_heads_and_widths(d, remap)
        rules.apply_width_rules(d)
    if "experts" in parts:
        _shrink_experts(d)
    if "images" in parts:
        _shrink_images(d, remap)
    if "vocab" in parts:
        _shrink_vocab(d, remap)
    if "positions" in parts:
        for key in POSITION_KEYS:
            if isinstance(d.get(key), int) and not isinstance(d[key], bool) and d[key] > MAX_POSITIONS:
                d[key] = MAX_POSITIONS
    for key, value in d.items():
        if isinstance(value, dict) and _is_sub_config(value):
            _walk(value, remap, str(key))
        elif isinstance(value, list):
            for item in value:
                if isinstance(item, dict) and _is_sub_config(item):
                    _walk(item, remap, str(key))


def _is_vision_tower(name: str) -> bool:
    return any(part in name for part in ("vision", "visual", "image"))


def _is_sub_config(value: dict[str, Any]) -> bool:
    return "model_type" in value or any(k in value for k in rules.HIDDEN_KEYS + rules.LAYER_KEYS)


def _first_int(d: dict[str, Any], keys: tuple[str, ...]) -> tuple[str | None, int]:
    for key in keys:
        value = d.get(key)
        if isinstance(value, int) and not isinstance(value, bool) and value > 0:
            return key, value
    return None, 0


def _headed_width(d: dict[str, Any]) -> tuple[int, int] | None:
    """(old, new) width of a config with more than MAX_HEADS heads: heads ≤ 4 keeping
    head_dim; the width follows heads × head_dim."""
    hidden_key, hidden = _first_int(d, rules.HIDDEN_KEYS)
    head_key, heads = _first_int(d, rules.HEAD_KEYS)
    if not hidden_key or not head_key or heads <= MAX_HEADS:
        return None
    new_heads = MAX_HEADS
    _, head_dim = _first_int(d, rules.HEAD_DIM_KEYS)
    if head_dim and head_dim * heads != hidden:
        # An explicit head_dim decouples the width from the heads: any width works
        # (a multiple of 8 keeps grouped matmuls' strides aligned).
        return hidden, min(_round8(hidden * new_heads / heads), rules.MAX_HEADLESS_WIDTH)
    if head_dim:
        return hidden, new_heads * head_dim
    if hidden % heads:
        return hidden, _round8(hidden * new_heads / heads)
    # A head width the config only implies (hidden / heads) is no structural choice:
    # wide ones are narrowed, so four heads do not keep a 2048-wide model.
    return hidden, new_heads * min(hidden // heads, MAX_IMPLIED_HEAD_DIM)


def _plan_head_widths(d: dict[str, Any], remap: _Remap) -> None:
    planned = _headed_width(d)
    if planned is not None:
        remap.head_widths.setdefault(*planned)
    for value in d.values():
        items = value if isinstance(value, list) else [value]
        for item in items:
            if isinstance(item, dict) and _is_sub_config(item):
                _plan_head_widths(item, remap)


def _shrink_heads_and_widths(d: dict[str, Any], remap: _Remap) -> None:
    """Heads ≤ 4 keeping head_dim and the GQA ratio; widths follow heads × head_dim."""
    hidden_key, hidden = _first_int(d, rules.HIDDEN_KEYS)
    head_key, heads = _first_int(d, rules.HEAD_KEYS)
    if not hidden_key:
        return
    planned = _headed_width(d)
    if planned is not None:
        new_hidden = planned[1]
        for key in rules.HEAD_KEYS:
            if isinstance(d.get(key), int) and d[key] > MAX_HEADS:
                d[key] = MAX_HEADS
        for key in rules.KV_HEAD_KEYS:
            kv = d.get(key)
            if isinstance(kv, int) and kv > 0:
                d[key] = MAX_HEADS if kv >= heads else max(1, MAX_HEADS // max(1, heads // kv))
    elif head_key or rules.is_convolutional(d):
        return
    elif hidden in remap.head_widths:
        new_hidden = remap.head_widths[hidden]  # a tower's width, repeated by value
    elif hidden > rules.MAX_HEADLESS_WIDTH:
        new_hidden = rules.MAX_HEADLESS_WIDTH
    else:
        return
    ratio = new_hidden / hidden
    for key in rules.HIDDEN_KEYS:
        if d.get(key) == hidden:
            d[key] = new_hidden
            remap.touched.add((id(d), key))
    for key, value in list(d.items()):
        if rules.is_scaled_width_key(key) and isinstance(value, int) and value > 0:
            d[key] = _round8(value * ratio)
            remap.touched.add((id(d), key))
    remap.widths.setdefault(hidden, new_hidden)
    rules.fix_ssm_heads(d)


def _round8(value: float) -> int:
    return max(8, int(round(value / 8)) * 8)


def _shrink_experts(d: dict[str, Any]) -> None:
    cut = False
    for key in rules.EXPERT_KEYS:
        if isinstance(d.get(key), int) and d[key] > MAX_EXPERTS:
            d[key] = MAX_EXPERTS
            cut = True
    hidden = next((d[k] for k in rules.HIDDEN_KEYS if isinstance(d.get(k), int)), None)
    if cut and hidden:
        # Each expert holds a feed-forward: keep them at most 2× the width so a tiny
        # MoE stays a few million parameters.
        for key, value in list(d.items()):
            if rules.is_intermediate_key(key) and isinstance(value, int) and value > 2 * hidden:
                d[key] = 2 * hidden
    for key in rules.TOP_K_KEYS:
        if isinstance(d.get(key), int) and d[key] > MAX_TOP_K:
            d[key] = MAX_TOP_K
    for key in rules.GROUP_KEYS:
        if isinstance(d.get(key), int) and d[key] > 1:
            d[key] = 1


def _shrink_images(d: dict[str, Any], remap: _Remap) -> None:
    for key in rules.IMAGE_SIZE_KEYS:
        value = d.get(key)
        if isinstance(value, int) and value > MAX_IMAGE:
            d[key] = SHRUNK_IMAGE
            remap.image_sides = remap.image_sides or (value, SHRUNK_IMAGE)
        elif isinstance(value, list) and value and all(isinstance(v, int) for v in value):
            if max(value) > MAX_IMAGE:
                d[key] = [SHRUNK_IMAGE for _ in value]
                remap.image_sides = remap.image_sides or (max(value), SHRUNK_IMAGE)
        elif isinstance(value, dict):
            d[key] = {k: SHRUNK_IMAGE if isinstance(v, int) and v > MAX_IMAGE else v for k, v in value.items()}


def _collect_special_ids(d: dict[str, Any], remap: _Remap) -> None:
    """Map every special token id ≥ the tiny vocab to a compact slot below it."""
    for key, value in d.items():
        if isinstance(value, dict) and _is_sub_config(value):
            _collect_special_ids(value, remap)
        elif isinstance(key, str) and rules.is_token_id_key(key):
            for v in value if isinstance(value, list) else [value]:
                if isinstance(v, int) and not isinstance(v, bool) and v >= TINY_VOCAB:
                    slot = SPECIAL_ID_BASE + len(remap.special_ids) % (TINY_VOCAB - SPECIAL_ID_BASE)
                    remap.special_ids.setdefault(v, slot)


def _shrink_vocab(d: dict[str, Any], remap: _Remap) -> None:
    for key, value in list(d.items()):
        if rules.is_token_id_key(key):
            if isinstance(value, int) and not isinstance(value, bool):
                d[key] = remap.special_ids.get(value, value)
            elif isinstance(value, list):
                d[key] = [remap.special_ids.get(v, v) if isinstance(v, int) else v for v in value]
        elif rules.is_vocab_key(key) and isinstance(value, int) and value > TINY_VOCAB:
            d[key] = TINY_VOCAB


def _apply_widths(d: dict[str, Any], remap: _Remap) -> None:
    """Fields that held an old width by value (cross-config links) take the new one."""
    for key, value in list(d.items()):
        if isinstance(value, dict) and _is_sub_config(value):
            _apply_widths(value, remap)
        elif (id(d), key) in remap.touched:
            continue
        elif key in rules.HIDDEN_KEYS and rules.is_convolutional(d):
            continue  # a staged tower's width derives from its stages, which keep theirs
        elif isinstance(key, str) and isinstance(value, int) and rules.is_width_link_key(key) and value in remap.widths:
            d[key] = remap.widths[value]
