"""Real Hub files for the weights modes: a model's config.json, and pretrained weights.

``fetch_config`` serves ``--weights random`` / ``tiny`` when a Hub config is wanted;
``load_pretrained`` serves ``--weights pretrained``. Weights are loaded from safetensors
only (pickled ``.bin`` checkpoints can run code when loaded), config and weights come from
one pinned commit, repos whose config names remote code (``auto_map``) are refused
unless the sweep trusts remote code, and weights over the size limits (``sizes``) are
refused before they are downloaded.

Failures keep the types ``classify`` reads: huggingface_hub's own errors pass through
unwrapped (``GatedRepoError``, ``RepositoryNotFoundError``, ``RevisionNotFoundError``,
``EntryNotFoundError``; transformers' ``OSError`` wrappers are peeled off), and the
sweeper's errors carry their ``reason_kind``.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from sweeper.hub.http import install
from sweeper.records import ModelRef, ReasonKind
from sweeper.settings.errors import (
    ConfigError,
    RemoteCodeError,
    SweeperError,
    UnsupportedLibraryError,
)

if TYPE_CHECKING:
    import torch

    from sweeper.settings.config import SweepConfig


class UnsafeWeightsError(SweeperError):
    """The repo has no safetensors weights; pickled checkpoints are never loaded."""

    reason_kind = ReasonKind.DOWNLOAD


class HubUnreachableError(SweeperError):
    """The Hub could not be reached (connection, timeout, offline mode without a cache)."""

    reason_kind = ReasonKind.DOWNLOAD


def fetch_config(ref: ModelRef, cfg: SweepConfig) -> dict[str, Any] | None:
    """The repo's config.json at ``ref.revision``; ``None`` when the repo has none.

    Raises ``RemoteCodeError`` when the config names remote code (``auto_map``) and the
    sweep does not trust it: such a model cannot be built from transformers' own classes.
    """
    from huggingface_hub import hf_hub_download
    from huggingface_hub.errors import RemoteEntryNotFoundError

    from sweeper.hub.access import endpoint

    install(cfg)
    try:
        with _hub_errors(ref):
            path = hf_hub_download(ref.model_id, "config.json", revision=ref.revision, endpoint=endpoint())
    except RemoteEntryNotFoundError:
        return None  # e.g. a diffusers or GGUF repo: no transformers config at the root
    try:
        with open(path, encoding="utf-8") as handle:
            config = json.load(handle)
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{ref.model_id}: config.json is not valid JSON ({exc})") from exc
    if not isinstance(config, dict):
        raise UnsupportedLibraryError(f"{ref.model_id}: config.json is not a JSON object")
    require_no_remote_code(ref, config, cfg)
    return config


def require_no_remote_code(ref: ModelRef, config: dict[str, Any], cfg: SweepConfig) -> None:
    """Raise ``RemoteCodeError`` if ``config`` needs code from the repo and that is not allowed."""
    auto_map = config.get("auto_map")
    if auto_map and not cfg.materialise.trust_remote_code:
        classes = ", ".join(sorted(auto_map)) if isinstance(auto_map, dict) else str(auto_map)
        raise RemoteCodeError(f"{ref.model_id} needs trust_remote_code (auto_map: {classes})")


def load_pretrained(ref: ModelRef, cfg: SweepConfig, head_class: type) -> torch.nn.Module:
    """``head_class.from_pretrained`` on the repo's safetensors weights, at one commit."""
    import torch

    from sweeper.libraries.transformers.sizes import check_size

    install(cfg)
    info = _repo_info(ref)
    revision = (info.sha if info is not None else None) or ref.revision
    pinned = ModelRef.from_dict({**ref.to_dict(), "revision": revision})
    config = fetch_config(pinned, cfg)
    if config is None:
        raise UnsupportedLibraryError(f"{ref.model_id} has no config.json; not a transformers model")
    if info is not None and info.siblings is not None:
        if not any(s.rfilename.endswith(".safetensors") for s in info.siblings):
            raise UnsafeWeightsError(f"{ref.model_id} has no safetensors weights (pickled checkpoints are not loaded)")
        with _hub_errors(ref):
            check_size(pinned, info, revision, cfg)  # before any weights are downloaded
    with _hub_errors(ref):
        model = head_class.from_pretrained(
            ref.model_id,
            revision=revision,
            use_safetensors=True,
            trust_remote_code=cfg.materialise.trust_remote_code,
            dtype=getattr(torch, cfg.device.dtype),
        )
    return model


def _repo_info(ref: ModelRef) -> Any:
    """The repo's ``ModelInfo`` with file sizes: its commit pins config and weights together.

    Offline, the Hub cannot be asked (``None``): the ref's revision is used as is and files
    are checked by transformers against the local cache.
    """
    from huggingface_hub import HfApi

    from sweeper.hub.access import endpoint, hub_offline

    if hub_offline():
        return None
    with _hub_errors(ref):
        return HfApi(endpoint=endpoint()).model_info(ref.model_id, revision=ref.revision, files_metadata=True)


# Hub client errors that mean "no answer and nothing cached", not "the Hub said no".
_UNREACHABLE = frozenset({"LocalEntryNotFoundError", "OfflineModeIsEnabled"})


@contextlib.contextmanager
def _hub_errors(ref: ModelRef) -> Iterator[None]:
    """Re-raise hub errors unwrapped and connection failures as ``HubUnreachableError``."""
    try:
        yield
    except SweeperError:
        raise
    except Exception as exc:
        hub_error = _hub_cause(exc)
        if hub_error is not None and type(hub_error).__name__ in _UNREACHABLE:
            from sweeper.hub.access import one_line

            raise HubUnreachableError(f"{ref.model_id}: {one_line(hub_error)}") from hub_error
        if hub_error is not None:
            # transformers wraps hub errors in OSError; classify wants the original type.
            raise hub_error from hub_error.__cause__
        if _is_connection_error(exc):
            from sweeper.hub.access import one_line

            raise HubUnreachableError(f"{ref.model_id}: {one_line(exc)}") from exc
        raise


def _hub_cause(exc: BaseException) -> BaseException | None:
    """The first huggingface_hub error in ``exc``'s ``__cause__`` chain (itself included).

    Only explicit causes (``raise ... from``) count: a context is an error that was being
    handled, which may have nothing to do with the one raised.
    """
    from huggingface_hub.errors import EntryNotFoundError, HfHubHTTPError

    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        if isinstance(current, (HfHubHTTPError, EntryNotFoundError)):
            return current
        current = current.__cause__
    return None


def _is_connection_error(exc: BaseException) -> bool:
    from sweeper.hub.client import http_module

    TransportError = http_module().TransportError  # the HTTP client huggingface_hub uses
    current: BaseException | None = exc
    for _ in range(8):  # causes are short chains; bound the walk anyway
        if current is None:
            return False
        if isinstance(current, (TransportError, ConnectionError, TimeoutError)):
            return True
        current = current.__cause__
    return False

