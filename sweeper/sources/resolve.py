"""Find the ref for one model named on the command line (``sweep one MODEL``)."""

from __future__ import annotations

import dataclasses

from sweeper.records import ModelRef
from sweeper.settings.config import SweepConfig
from sweeper.settings.errors import UsageError
from sweeper.sources.base import get_source


def _find(model: str, cfg: SweepConfig, source: str) -> ModelRef | None:
    wanted = {model, model.lower(), f"zoo/{model}"}
    for ref in get_source(cfg.replace(source=source, top=None)).refs():
        if ref.model_id in wanted or (source == "zoo" and ref.model_type == model):
            return ref
    return None


def _from_hub(model: str, cfg: SweepConfig) -> ModelRef | None:
    """Ask the Hub (when it answers) about a model id the local sources do not list."""
    from sweeper.hub.access import hub_offline

    if hub_offline():
        return None
    try:
        from huggingface_hub import model_info

        from sweeper.hub.http import install

        install(cfg)
        info = model_info(model, timeout=cfg.source.hub_timeout)
    except Exception as exc:  # unreachable Hub or unknown repo: the caller says which
        if type(exc).__name__ in ("RepositoryNotFoundError", "RevisionNotFoundError"):
            raise UsageError(f"unknown model {model!r}: the Hub has no such repository") from None
        return None
    config = getattr(info, "config", None) or {}
    return ModelRef(
        model_id=info.id, rank=1, downloads=getattr(info, "downloads", None), pipeline_tag=info.pipeline_tag,
        library_name=getattr(info, "library_name", None), model_type=config.get("model_type"),
        revision=getattr(info, "sha", None), source="hub",
    )


def described_model(model: str, *, library: str | None = None, model_type: str | None = None, task: str | None = None,
                    revision: str | None = None, architecture: str | None = None) -> ModelRef:
    """The ref a catalog row makes, from the flags that describe it (a record's repro names
    no catalog file, so it runs on any machine)."""
    return ModelRef(model_id=model, rank=1, pipeline_tag=task, library_name=library, model_type=model_type,
                    revision=revision, architecture=architecture, source="catalog")


def resolve_model(model: str, cfg: SweepConfig, *, architecture: str | None = None) -> ModelRef:
    """The catalog's entry, else the zoo's (by id or model type), else the Hub's."""
    ref = None
    if cfg.source.catalog:
        ref = _find(model, cfg, "catalog")
    ref = ref or _find(model, cfg, "zoo") or _from_hub(model, cfg)
    if ref is None:
        where = "the catalog, " if cfg.source.catalog else ""
        raise UsageError(f"unknown model {model!r}: not in {where}the zoo, and the Hub is unreachable (try a model type such as `bert`)")
    return dataclasses.replace(ref, architecture=architecture) if architecture else ref
