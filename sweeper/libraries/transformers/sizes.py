"""Size limits for pretrained weights, checked before a byte of them is downloaded.

The download size comes from the repo's file sizes (``model_info(files_metadata=True)``),
else from the safetensors index's ``total_size``; the parameter count from the Hub's
safetensors summary, else from the safetensors headers (a few KB each, read with range
requests). A model above ``--max-download-gb`` or ``--max-params`` is a ``too_large``
environment outcome. Without the flags the limits are what the node running the worker
can hold: the free disk under the Hub cache, and the memory available for the weights
(and their gradients when the sweep runs backward).
"""

from __future__ import annotations

import json
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sweeper.records import ModelRef, ReasonKind
from sweeper.settings.errors import SweeperError

if TYPE_CHECKING:
    from sweeper.settings.config import SweepConfig

GB = 1e9
INDEX_FILE = "model.safetensors.index.json"
DTYPE_BYTES = {"float32": 4, "bfloat16": 2, "float16": 2}
DISK_SHARE = 0.9  # of the free disk a download may take: the cache must not fill the disk
MEMORY_HEADROOM = 1.25  # activations, the inputs and the framework beside the weights


class WeightsTooLargeError(SweeperError):
    """The model's weights exceed what the sweep (or the node) allows; never downloaded."""

    reason_kind = ReasonKind.TOO_LARGE


@dataclass(frozen=True)
class WeightSize:
    """What loading the repo's safetensors weights costs (``None``: not known)."""

    download_bytes: int | None
    params: int | None


def weight_files(info: Any) -> list[Any]:
    """The repo's top-level safetensors files: the ones ``from_pretrained`` downloads."""
    siblings = info.siblings or []
    return [s for s in siblings if s.rfilename.endswith(".safetensors") and "/" not in s.rfilename]


def download_bytes(ref: ModelRef, info: Any, revision: str | None) -> int | None:
    """Bytes of safetensors weights to download, from the file list or the index."""
    files = weight_files(info)
    if files and all(s.size is not None for s in files):
        return sum(int(s.size) for s in files)
    if not any(s.rfilename == INDEX_FILE for s in info.siblings or []):
        return None
    from huggingface_hub import hf_hub_download

    from sweeper.hub.access import endpoint

    index = json.loads(Path(hf_hub_download(ref.model_id, INDEX_FILE, revision=revision, endpoint=endpoint())).read_text())
    total = (index.get("metadata") or {}).get("total_size")
    return int(total) if isinstance(total, (int, float)) else None


def param_count(ref: ModelRef, info: Any, revision: str | None) -> int | None:
    """Parameters from the Hub's safetensors summary, else from the files' headers."""
    summary = getattr(info, "safetensors", None)
    if summary is not None and summary.total:
        return int(summary.total)
    if not weight_files(info):
        return None
    from huggingface_hub import HfApi

    from sweeper.hub.access import endpoint

    metadata = HfApi(endpoint=endpoint()).get_safetensors_metadata(ref.model_id, revision=revision)
    return sum(sum(f.parameter_count.values()) for f in metadata.files_metadata.values())


def check_size(ref: ModelRef, info: Any, revision: str | None, cfg: SweepConfig) -> WeightSize:
    """Raise ``WeightsTooLargeError`` when the weights exceed the limits; returns what was read.

    The download is checked first: a 140 GB repo is refused without reading its headers.
    """
    max_bytes = limit_bytes(cfg)
    size = download_bytes(ref, info, revision)
    if size is not None and size > max_bytes:
        raise WeightsTooLargeError(f"{ref.model_id}: {size / GB:.1f} GB of weights > download limit {max_bytes / GB:.1f} GB")
    max_params = limit_params(cfg)
    params = param_count(ref, info, revision)
    if params is not None and params > max_params:
        raise WeightsTooLargeError(f"{ref.model_id}: {params:,} parameters > limit {max_params:,}")
    return WeightSize(size, params)


def limit_bytes(cfg: SweepConfig) -> float:
    """``--max-download-gb``, else a share of the free disk under the Hub cache."""
    if cfg.materialise.max_download_gb is not None:
        return cfg.materialise.max_download_gb * GB
    from huggingface_hub import constants

    return DISK_SHARE * shutil.disk_usage(_existing(Path(constants.HF_HUB_CACHE))).free


def limit_params(cfg: SweepConfig) -> int:
    """``--max-params``, else what the available memory holds in the sweep's dtype."""
    if cfg.materialise.max_params is not None:
        return cfg.materialise.max_params
    import psutil

    copies = 2 if "backward" in cfg.check.stages else 1  # gradients are as large as the weights
    per_param = DTYPE_BYTES.get(cfg.device.dtype, 4) * copies * MEMORY_HEADROOM
    return int(psutil.virtual_memory().available / per_param)


def _existing(path: Path) -> Path:
    """``path`` or its nearest existing parent (the cache may not exist yet)."""
    for candidate in (path, *path.parents):
        if candidate.exists():
            return candidate
    return Path.cwd()
