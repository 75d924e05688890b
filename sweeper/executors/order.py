"""Which checks start first: the longest expected ones, so none is left running alone.

Workers take checks in the order given. In rank order, a slow check that comes late (a
multimodal model at rank 971: 87 s) runs while the other workers have nothing left, and
the sweep waits for it. Started first, it overlaps with the many short ones. A check's
length is not known before it runs, but what the catalog row says predicts it well
enough to order by (longest first is within a few seconds of the best order for the
top 1,000; ``expected_seconds``). Within a class the catalog's rank order is kept.
"""

from __future__ import annotations

from collections.abc import Iterable

from sweeper.records import ModelRef

# Mean seconds of a check on trnsim per kind of model (top 1,000 of 2025-03, tiny
# builds, 2 workers on 2 cores): diffusers pipelines run several components; vision,
# audio and multimodal models trace conv stacks, towers and feature extractors; text
# models one stack; a format or library that is not PyTorch is answered at once.
PIPELINE_SECONDS = 12.0
MEDIA_SECONDS = 7.0
TEXT_SECONDS = 2.5
NOT_RUN_SECONDS = 0.0

# Words of a pipeline tag that name a non-text input or output ("mask" alone would take
# fill-mask in: mask-generation is named whole).
_MEDIA_WORDS = frozenset({"image", "video", "audio", "speech", "object", "depth", "keypoint", "visual", "document",
                          "segmentation", "voice"})
_MEDIA_TAGS = frozenset({"mask-generation"})
# Libraries whose models are pipelines of several models, and libraries of vision models only.
_PIPELINE_LIBRARIES = frozenset({"diffusers"})
_VISION_LIBRARIES = frozenset({"timm", "open_clip"})


def expected_seconds(ref: ModelRef, supported: frozenset[str]) -> float:
    """A check's expected length, by the class its catalog row puts it in."""
    library = ref.library_name or ""
    if library in _PIPELINE_LIBRARIES:
        return PIPELINE_SECONDS
    if library and library not in supported:
        return NOT_RUN_SECONDS
    tag = ref.pipeline_tag or ""
    if _MEDIA_WORDS.intersection(tag.split("-")) or tag in _MEDIA_TAGS or library in _VISION_LIBRARIES:
        return MEDIA_SECONDS
    return TEXT_SECONDS


def longest_first(refs: Iterable[ModelRef]) -> list[ModelRef]:
    """``refs`` with the longest expected checks first, rank order kept within a class."""
    from sweeper.libraries.registry import supported_names

    supported = supported_names()
    return sorted(refs, key=lambda ref: -expected_seconds(ref, supported))
