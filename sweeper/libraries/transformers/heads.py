"""Head classes of every model type, read from the installed transformers' auto mappings.

One table serves both the zoo source (which head to sweep for a type, and the task it
serves) and the materializer (which head a ``pipeline_tag`` asks for). Mapping names are
the suffix of ``MODEL_FOR_<X>_MAPPING_NAMES`` ("" for the base ``MODEL_MAPPING_NAMES``).
"""

from __future__ import annotations

import functools

# Zoo preference: heads that give a loss and run the whole model come first. Seq2seq
# heads precede causal LM because for encoder-decoders the causal LM is decoder-only.
HEAD_PREFERENCE: tuple[tuple[str, str], ...] = (
    ("SEQ_TO_SEQ_CAUSAL_LM", "text2text-generation"),
    ("SPEECH_SEQ_2_SEQ", "automatic-speech-recognition"),
    # Encoders that also offer a causal LM head are masked LMs first.
    ("MASKED_LM", "fill-mask"),
    ("CAUSAL_LM", "text-generation"),
    ("CTC", "automatic-speech-recognition"),
    ("IMAGE_TEXT_TO_TEXT", "image-text-to-text"),
    ("MULTIMODAL_LM", "image-text-to-text"),
    ("ZERO_SHOT_IMAGE_CLASSIFICATION", "zero-shot-image-classification"),
    ("IMAGE_CLASSIFICATION", "image-classification"),
    ("AUDIO_CLASSIFICATION", "audio-classification"),
    ("VIDEO_CLASSIFICATION", "video-classification"),
    ("SEQUENCE_CLASSIFICATION", "text-classification"),
    ("TIME_SERIES_PREDICTION", "time-series-forecasting"),
    ("SEMANTIC_SEGMENTATION", "image-segmentation"),
    ("DEPTH_ESTIMATION", "depth-estimation"),
    ("TEXT_TO_SPECTROGRAM", "text-to-audio"),
    ("TEXT_TO_WAVEFORM", "text-to-audio"),
    ("", "feature-extraction"),
)

# pipeline_tag -> the mappings that serve it, most specific first.
TASK_HEADS: dict[str, tuple[str, ...]] = {
    "text-generation": ("CAUSAL_LM",),
    "fill-mask": ("MASKED_LM",),
    "text2text-generation": ("SEQ_TO_SEQ_CAUSAL_LM",),
    "summarization": ("SEQ_TO_SEQ_CAUSAL_LM",),
    "translation": ("SEQ_TO_SEQ_CAUSAL_LM",),
    "automatic-speech-recognition": ("SPEECH_SEQ_2_SEQ", "CTC"),
    "audio-classification": ("AUDIO_CLASSIFICATION",),
    "image-classification": ("IMAGE_CLASSIFICATION",),
    "video-classification": ("VIDEO_CLASSIFICATION",),
    "text-classification": ("SEQUENCE_CLASSIFICATION",),
    "zero-shot-classification": ("SEQUENCE_CLASSIFICATION",),
    "token-classification": ("TOKEN_CLASSIFICATION",),
    "question-answering": ("QUESTION_ANSWERING",),
    "multiple-choice": ("MULTIPLE_CHOICE",),
    "image-text-to-text": ("IMAGE_TEXT_TO_TEXT", "MULTIMODAL_LM"),
    "image-to-text": ("IMAGE_TEXT_TO_TEXT", "MULTIMODAL_LM"),
    "visual-question-answering": ("VISUAL_QUESTION_ANSWERING", "IMAGE_TEXT_TO_TEXT"),
    "document-question-answering": ("DOCUMENT_QUESTION_ANSWERING",),
    "table-question-answering": ("TABLE_QUESTION_ANSWERING",),
    "zero-shot-image-classification": ("ZERO_SHOT_IMAGE_CLASSIFICATION",),
    "zero-shot-object-detection": ("ZERO_SHOT_OBJECT_DETECTION",),
    "object-detection": ("OBJECT_DETECTION",),
    "image-segmentation": ("SEMANTIC_SEGMENTATION", "IMAGE_SEGMENTATION", "UNIVERSAL_SEGMENTATION"),
    "mask-generation": ("MASK_GENERATION",),
    "depth-estimation": ("DEPTH_ESTIMATION",),
    "keypoint-detection": ("KEYPOINT_DETECTION",),
    "image-to-image": ("IMAGE_TO_IMAGE",),
    "text-to-audio": ("TEXT_TO_WAVEFORM", "TEXT_TO_SPECTROGRAM"),
    "text-to-speech": ("TEXT_TO_WAVEFORM", "TEXT_TO_SPECTROGRAM"),
    "time-series-forecasting": ("TIME_SERIES_PREDICTION",),
    "feature-extraction": ("",),
    "sentence-similarity": ("",),
}


@functools.lru_cache(maxsize=1)
def head_table() -> dict[str, dict[str, tuple[str, ...]]]:
    """``{mapping suffix: {model_type: (class names...)}}`` from the auto mappings."""
    from transformers.models.auto import modeling_auto

    table: dict[str, dict[str, tuple[str, ...]]] = {}
    for attr in dir(modeling_auto):
        if not (attr.startswith("MODEL_") and attr.endswith("_MAPPING_NAMES")):
            continue
        suffix = attr[len("MODEL_") : -len("_MAPPING_NAMES")].removeprefix("FOR_")
        mapping = getattr(modeling_auto, attr)
        table[suffix] = {k: (v,) if isinstance(v, str) else tuple(v) for k, v in mapping.items()}
    return table


def heads_of(model_type: str) -> dict[str, tuple[str, ...]]:
    """Every head mapping a model type appears in: ``{mapping suffix: classes}``."""
    return {suffix: m[model_type] for suffix, m in head_table().items() if model_type in m}


def preferred_head(model_type: str) -> tuple[str, str] | None:
    """The zoo's head for a type and the task it serves, or None when it has no model."""
    heads = heads_of(model_type)
    for suffix, task in HEAD_PREFERENCE:
        if suffix in heads:
            return heads[suffix][0], task
    if heads:
        # A type only in a rarer mapping (backbone, keypoint matching, ...): take it.
        suffix = sorted(heads)[0]
        return heads[suffix][0], _task_for_suffix(suffix)
    return None


def head_for_task(model_type: str, pipeline_tag: str | None) -> str | None:
    """The class serving ``pipeline_tag`` for a type, or None when the tag does not map."""
    heads = heads_of(model_type)
    for suffix in TASK_HEADS.get(pipeline_tag or "", ()):
        if suffix in heads:
            return heads[suffix][0]
    return None


def kind_of_class(model_type: str | None, class_name: str) -> str | None:
    """The mapping suffix a class is listed under for its type (its head kind)."""
    order = [s for s, _ in HEAD_PREFERENCE] + sorted(head_table())
    for suffix in order:
        classes = head_table().get(suffix, {})
        if model_type in classes and class_name in classes[model_type]:
            return suffix
    for suffix in order:
        if any(class_name in v for v in head_table().get(suffix, {}).values()):
            return suffix
    return None


def _task_for_suffix(suffix: str) -> str:
    for task, suffixes in TASK_HEADS.items():
        if suffix in suffixes:
            return task
    return suffix.lower().replace("_", "-") or "feature-extraction"
