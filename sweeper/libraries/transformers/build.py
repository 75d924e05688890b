"""Orchestration: a ref and a sweep config in, a ``Built`` (model + inputs) out.

Steps: library check → config (the ref's, the Hub's, or the type's default) → shrink
for tiny weights (checked on ``meta`` against the parameter cap, with a fallback
ladder) → head class → seeded build in eval mode → inputs by rules. Known failures raise
``sweeper.settings.errors`` subclasses so ``classify`` needs no message parsing.
"""

from __future__ import annotations

import contextlib
import importlib.util
import json
from collections.abc import Iterator
from typing import Any

from sweeper.libraries.built import Built
from sweeper.libraries.pristine import pristine
from sweeper.libraries.quantization import detect, importable, not_applied
from sweeper.libraries.transformers.configs import LEVELS, config_to_dict, shrink_config_dict
from sweeper.libraries.transformers.fitting import fit_widths
from sweeper.libraries.transformers.heads import kind_of_class
from sweeper.libraries.transformers.images import wants_images, with_images
from sweeper.libraries.transformers.inputs import cast_floating, make_inputs, model_dtype
from sweeper.libraries.transformers.layers import MAX_LAYERS, UNIFORM_LAYERS
from sweeper.libraries.transformers.memory_estimate import MemoryBudgetError, check_fits, meta_model
from sweeper.libraries.transformers.models import build_model, choose_head, count_on_meta, transformers_class
from sweeper.libraries.transformers.quantize import APPLIES, quantize
from sweeper.records import ModelRef, ReasonKind
from sweeper.settings.errors import ConfigError, RemoteCodeError, SweeperError, UnsupportedLibraryError

SUPPORTED_LIBRARIES = frozenset({"transformers", "sentence-transformers"})


class ShrinkError(SweeperError):
    """The default config builds but no shrunk variant does: a harness limitation."""

    reason_kind = ReasonKind.HARNESS


class TooLargeError(SweeperError):
    """The model to build exceeds the sweep's ``max_parameters`` cap."""

    reason_kind = ReasonKind.HARNESS


def check_library(ref: ModelRef) -> None:
    """Raise UnsupportedLibraryError for models of libraries other than transformers."""
    if ref.library_name not in (None, "") and ref.library_name not in SUPPORTED_LIBRARIES:
        raise UnsupportedLibraryError(f"library {ref.library_name!r} is not supported (transformers models only)")


def config_data(ref: ModelRef, cfg: Any, notes: dict[str, Any]) -> dict[str, Any]:
    """The config dict to start from: the ref's, the Hub's config.json, or {} (the
    type's default). Hub refs fetch theirs; tiny/random fall back to the default only
    when the Hub cannot be reached, and the note says so."""
    if ref.config is not None:
        notes["config_source"] = "ref"
        return dict(ref.config)
    from sweeper.libraries.transformers.default_config import names_default_config

    from_hub = ref.source not in (None, "zoo") and not names_default_config(ref.model_id)
    if cfg.materialise.weights == "pretrained" or from_hub:
        from sweeper.libraries.transformers.pretrained import HubUnreachableError, fetch_config

        try:
            data = fetch_config(ref, cfg)
        except HubUnreachableError:
            if cfg.materialise.weights == "pretrained" or not ref.model_type:
                raise
            notes["config_source"] = "default (hub unreachable)"
            return {}
        if data is None:
            raise UnsupportedLibraryError(f"{ref.model_id} has no config.json: not a transformers model")
        notes["config_source"] = "hub"
        return data
    notes["config_source"] = "default"
    return {}


def base_config(ref: ModelRef, cfg: Any, notes: dict[str, Any] | None = None) -> Any:
    """The transformers config to start from (see ``config_data``)."""
    from transformers import AutoConfig
    from transformers.models.auto.configuration_auto import CONFIG_MAPPING

    data = config_data(ref, cfg, notes if notes is not None else {})
    model_type = data.get("model_type") or ref.model_type
    if data.get("auto_map") and not cfg.materialise.trust_remote_code:
        raise RemoteCodeError(f"{ref.model_id} ships its own code (auto_map) and trust_remote_code is off")
    if not model_type or model_type not in CONFIG_MAPPING:
        if data.get("auto_map"):
            raise RemoteCodeError(f"model type {model_type!r} is defined by the checkpoint's own code")
        raise ConfigError(f"model type {model_type!r} is unknown to the installed transformers")
    try:
        if not data:
            return _as_released(AutoConfig.for_model(model_type), notes)
        return CONFIG_MAPPING[model_type].from_dict({k: v for k, v in data.items() if k != "model_type"})
    except Exception as exc:  # noqa: BLE001 - any failure here is the config's
        raise ConfigError(f"config for {model_type!r} does not build: {type(exc).__name__}: {exc}") from exc


def _as_released(config: Any, notes: dict[str, Any] | None) -> Any:
    """A type's default config with the fields its released checkpoints always carry.

    T5-style encoder-decoders read ``config.decoder_start_token_id`` to shift labels right,
    but their default config no longer defines it (it moved to the generation config), so a
    default-config build fails where every released checkpoint (``decoder_start_token_id``
    = the pad token) runs: our input, not the model's failure.
    """
    pad = getattr(config, "pad_token_id", None)
    if getattr(config, "is_encoder_decoder", False) and not hasattr(config, "decoder_start_token_id") and isinstance(pad, int):
        config.decoder_start_token_id = pad
        if notes is not None:
            notes["config_filled"] = "decoder_start_token_id = pad_token_id (as released checkpoints set it)"
    return config


def tiny_configs(config: Any, cls: type, cap: int, *, cfg: Any = None) -> Iterator[tuple[str, Any]]:
    """Shrunk configs whose model builds on meta under ``cap``, most aggressive first
    (and, given the sweep's ``cfg``, whose estimated memory fits its budget).

    Raises when none does: ConfigError when even the unmodified config fails (upstream),
    else the first level's error (ShrinkError / TooLargeError: our limitation).
    """
    data = config_to_dict(config)
    first_error: BaseException | None = None
    found = False
    for level in _with_layer_fallbacks(data):
        try:
            name, alike = _level_args(level)
            shrunk = type(config).from_dict(shrink_config_dict(data, name, alike_keep=alike))
            on_meta = meta_model(cls, shrunk)
            count = sum(p.numel() for p in on_meta.parameters())
        except Exception as exc:  # noqa: BLE001 - try the next, gentler level
            first_error = first_error or exc
            continue
        if count > cap:
            first_error = first_error or TooLargeError(f"{count:,} parameters after shrinking ({level}) > cap {cap:,}")
            continue
        if cfg is not None:
            try:
                check_fits(on_meta, shrunk, cfg)
            except MemoryBudgetError as exc:
                first_error = first_error or exc
                continue
        found = True
        yield level, shrunk
    if found:
        return
    _control(config, cls)
    if isinstance(first_error, SweeperError):
        raise first_error
    raise ShrinkError(f"shrunk config fails to build: {type(first_error).__name__}: {first_error}") from first_error


# A level whose alike layers were cut to one, tried again with two: some model code
# needs a second layer (LightGlue reads a per-layer confidence set only before the last).
TWO_LAYERS = " (two alike layers)"


def _with_layer_fallbacks(data: dict[str, Any]) -> Iterator[str]:
    """Each shrink level, then the same keeping two alike layers where that differs."""
    for level in LEVELS:
        yield level
        if shrink_config_dict(data, level) != shrink_config_dict(data, level, alike_keep=MAX_LAYERS):
            yield level + TWO_LAYERS


def _level_args(level: str) -> tuple[str, int]:
    """``shrink_config_dict``'s level and ``alike_keep`` for a ladder step's name."""
    if level.endswith(TWO_LAYERS):
        return level[: -len(TWO_LAYERS)], MAX_LAYERS
    return level, UNIFORM_LAYERS


def _control(config: Any, cls: type) -> None:
    """Build the unmodified config on meta: a failure there is upstream's, not ours."""
    try:
        count_on_meta(cls, config)
    except ImportError:
        raise  # a missing optional package (timm, ...): classify's missing_dependency
    except Exception as exc:  # noqa: BLE001
        raise ConfigError(f"default config does not build upstream: {type(exc).__name__}: {exc}") from exc


def build(ref: ModelRef, cfg: Any) -> Built:
    """Materialise ``ref`` per ``cfg.materialise.weights`` (tiny, random or pretrained)."""
    check_library(ref)
    notes: dict[str, Any] = {"weights": cfg.materialise.weights}
    config = base_config(ref, cfg, notes)
    model_type = getattr(config, "model_type", None) or ref.model_type
    head = choose_head(ref, config)
    cls = transformers_class(head, model_type)
    kind = kind_of_class(model_type, head)
    quantization = detect(ref, config_to_dict(config))
    if quantization is not None and cfg.materialise.weights != "pretrained" and (
            quantization["method"] not in APPLIES or not importable(quantization["method"])):
        raise not_applied(quantization, "transformers", APPLIES)  # before a float build is spent
    if cfg.materialise.weights == "tiny":
        with _tiny_timm_parts(config):
            model, inputs, has_labels = _probe_tiny(config, cls, cfg, kind, notes)
    else:
        if cfg.materialise.weights == "pretrained":
            from sweeper.libraries.transformers.pretrained import load_pretrained

            model = load_pretrained(ref, cfg, cls)
        else:
            _checked_count(config, cls, cfg.materialise.max_parameters)
            check_fits(meta_model(cls, config), config, cfg)  # before the memory is spent
            model = _build(cls, config, cfg)
        inputs, has_labels = _inputs(model, kind, cfg, variant=0)
    if wants_images(model, inputs):
        # The rules build text-only inputs for vision-language models; the vision tower
        # runs only when images fill placeholder tokens.
        inputs, notes["images"] = with_images(
            model, inputs, head_kind=kind, batch=cfg.materialise.batch_size, seq=cfg.materialise.seq_len, seed=cfg.materialise.seed
        )
        inputs = cast_floating(inputs, model_dtype(model))
    num_parameters = sum(p.numel() for p in model.parameters())
    if quantization is not None:
        if cfg.materialise.weights == "pretrained":  # the checkpoint loaded through its own quantizer
            applied = getattr(model, "hf_quantizer", None) is not None
            quantization = {**quantization, "applied": applied, **({} if applied else {"why": "the checkpoint loaded unquantized"})}
        else:
            model, quantization = quantize(model, quantization, dtype=cfg.device.dtype)
    return Built(
        model=model, inputs=inputs, architecture=head, model_type=model_type,
        num_parameters=num_parameters, config=model.config,
        has_labels=has_labels, notes=notes, quantization=quantization or {},
    )


def _inputs(model: Any, kind: str | None, cfg: Any, *, variant: int) -> tuple[dict[str, Any], bool]:
    return make_inputs(model, model.config, head_kind=kind, batch=cfg.materialise.batch_size, seq=cfg.materialise.seq_len,
                       seed=cfg.materialise.seed, variant=variant)


def _probe_tiny(config: Any, cls: type, cfg: Any, kind: str | None, notes: dict[str, Any]) -> tuple[Any, dict, bool]:
    """The most aggressive shrink (and input layout) whose tiny model runs a forward.

    A shrink that breaks a width link no rule knows, or an ambiguous signal layout,
    shows up as a forward error; a gentler level or the other layout then runs. When
    nothing runs, the most aggressive candidate is returned and the forward stage
    reports its genuine error.
    """
    first: tuple[Any, dict, bool] | None = None
    for level, shrunk in tiny_configs(config, cls, cfg.materialise.max_parameters, cfg=cfg):
        model = _build(cls, shrunk, cfg)
        for variant in (0, 1, 2):
            try:
                inputs, has_labels = _inputs(model, kind, cfg, variant=variant)
            except LookupError:
                continue  # this variant would change nothing
            if first is None:
                first = (model, inputs, has_labels)
                notes.update(shrink=level, input_variant=variant)
            if _runs(model, inputs):
                notes.update(shrink=level, input_variant=variant)
                return model, inputs, has_labels
            fitted = fit_widths(model, inputs)
            if fitted is not None and _runs(model, fitted):
                notes.update(shrink=level, input_variant=variant, widths="fitted to the first layer")
                return model, fitted, has_labels
    notes["probe"] = "no candidate ran; kept the tiniest"
    assert first is not None
    control = _forward_control(config, cls, cfg, kind, first, dtype=cfg.device.dtype)
    if control and cfg.device.dtype != "float32" and _forward_control(config, cls, cfg, kind, first, dtype="float32") is None:
        # The model's own code fails in this dtype only (a float32 parameter it creates
        # beside bfloat16 weights): the model's, as a user loading it in that dtype meets it.
        notes["upstream_control"] = f"{control} (in {cfg.device.dtype} only)"
        return first
    # A forward the unshrunk default fails at the same place is no config error: the
    # config builds (config_error is only for one that does not, checked on meta), and
    # the inputs may be what it lacks. The note lets the CPU control call it the model's.
    if control:
        notes["upstream_control"] = control
    return first


def _forward_control(config: Any, cls: type, cfg: Any, kind: str | None, tiny: tuple[Any, dict, bool], *,
                     dtype: str) -> str | None:
    """Run the unmodified config's forward on ``meta`` (no memory, no compute). When it
    fails at the same place as the tiny model, the failure is no shrink artefact (it is
    upstream's, or the inputs'): the note says so for whoever reads the record."""
    import torch

    tiny_site = _failure_site(tiny[0], tiny[1])
    if tiny_site is None:
        return None
    try:
        # In ``dtype``: a model whose own code mixes dtypes in bfloat16 (float32 biases
        # beside bfloat16 weights) fails upstream in bfloat16 only.
        with torch.device("meta"):
            model = cls._from_config(config, dtype=getattr(torch, dtype))
        model.eval()
        inputs, _ = _inputs(model, kind, cfg, variant=0)
        inputs = {k: v.to("meta") if isinstance(v, torch.Tensor) else v for k, v in inputs.items()}
        # All-ones masks are the default, and checking them on meta needs .item(); without
        # one, some stacks look for packed sequences instead (.item() too): try both.
        site = _failure_site(model, {k: v for k, v in inputs.items() if k != "attention_mask"})
        if site is not None and "meta tensors" in site[3] and "attention_mask" in inputs:
            site = _failure_site(model, inputs)
    except Exception:  # noqa: BLE001 - a control that cannot run proves nothing
        return None
    if site is not None and site[:3] == tiny_site[:3]:
        return f"the unshrunk config fails the same way on meta: {site[3]}"
    return None


def _failure_site(model: Any, inputs: dict[str, Any]) -> tuple[str, str, int, str] | None:
    """(exception type, file, line, message) where a no-grad forward raised, or None."""
    import traceback

    import torch

    try:
        with torch.no_grad(), pristine(model):
            model(**dict(inputs))
    except Exception as exc:  # noqa: BLE001
        frames = traceback.extract_tb(exc.__traceback__)
        # The deepest frame in model code (torch's own frames are shared by everyone).
        frame = next((f for f in reversed(frames) if "/torch/" not in f.filename), frames[-1])
        return type(exc).__name__, frame.filename, frame.lineno or 0, f"{type(exc).__name__}: {exc}"[:300]
    return None


def _runs(model: Any, inputs: dict[str, Any]) -> bool:
    """Whether a no-grad forward on the CPU completes."""
    import torch

    try:
        with torch.no_grad(), pristine(model):
            model(**dict(inputs))
    except Exception:  # noqa: BLE001 - any failure means "try the next candidate"
        return False
    return True


def _checked_count(config: Any, cls: type, cap: int) -> int:
    try:
        count = count_on_meta(cls, config)
    except Exception as exc:  # noqa: BLE001
        raise ConfigError(f"config does not build: {type(exc).__name__}: {exc}") from exc
    if count > cap:
        raise TooLargeError(f"{count:,} parameters > max_parameters {cap:,}")
    return count


def _tiny_timm_parts(config: Any) -> contextlib.AbstractContextManager[None]:
    """Tiny timm parts (``TimmBackbone``: DETR, Table Transformer) while a tiny config
    builds: transformers hands timm no size arguments of its own."""
    text = json.dumps(config_to_dict(config), default=str)
    if '"timm_backbone"' not in text and '"use_timm_backbone": true' not in text:
        return contextlib.nullcontext()
    if importlib.util.find_spec("timm") is None:
        return contextlib.nullcontext()  # the build names the missing package itself
    from sweeper.libraries.timm.library import tiny_timm_builds

    return tiny_timm_builds()


def _build(cls: type, config: Any, cfg: Any) -> Any:
    try:
        return build_model(cls, config, seed=cfg.materialise.seed, dtype=cfg.device.dtype)
    except SweeperError:
        raise
    except ImportError:
        raise  # a missing optional package: classify turns it into missing_dependency
    except Exception as exc:  # noqa: BLE001
        raise ShrinkError(f"model does not build from its config: {type(exc).__name__}: {exc}") from exc
