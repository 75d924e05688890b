"""Formats on the Hub that are not PyTorch models: named, never failed.

A GGUF repo is llama.cpp weights of some base architecture (transformers can dequantise
one back into it); testing that base under the GGUF id would count the base twice, so the
record names the base (from the id, when it says so) and never passes on its own.
"""

from __future__ import annotations

import re

from sweeper.records import ModelRef, ReasonKind
from sweeper.settings.errors import SweeperError

# Hub library_name -> the format named in the record.
FORMATS = {
    "gguf": "gguf (llama.cpp weights)",
    "onnx": "onnx",
    "mlx": "mlx (Apple MLX)",
    "transformers.js": "transformers.js (onnx for the browser)",
    "keras": "keras",
    "tf-keras": "keras",
    "tensorflow": "tensorflow",
    "tflite": "tflite",
    "fasttext": "fasttext",
    "jax": "jax",
    "flax": "jax",
    "openvino": "openvino",
    "ctranslate2": "ctranslate2",
    "coreml": "coreml",
    "llama.cpp": "gguf (llama.cpp weights)",
    "paddlepaddle": "paddlepaddle",
    "paddlenlp": "paddlepaddle",
    "spacy": "spacy",
    "sklearn": "scikit-learn",
    "scikit-learn": "scikit-learn",
    "joblib": "scikit-learn",
    "stable-baselines3": "stable-baselines3",
}
# Base architectures a GGUF repo's id names, most specific first (the snapshot's
# model_type for GGUF rows is often wrong: it is not used).
_BASES = (
    ("qwen2", r"distill-qwen"), ("llama", r"distill-llama|(^|[-_])yi-"), ("qwen3", r"qwen-?3"), ("qwen2", r"qwen-?2|qwq"), ("llama", r"llama|tinyllama|vicuna|codellama"),
    ("mistral", r"mistral|zephyr"), ("mixtral", r"mixtral"), ("gemma3", r"gemma-?3"), ("gemma2", r"gemma-?2"),
    ("gemma", r"gemma"), ("phi3", r"phi-?3|phi-?4"), ("phi", r"phi-?2"), ("deepseek_v3", r"deepseek-?(v3|r1)"),
    ("falcon", r"falcon"), ("starcoder2", r"starcoder-?2"), ("gpt_oss", r"gpt-?oss"), ("bloom", r"bloom"),
)


# Id patterns of repos whose library the listing leaves empty: the format shows in the name.
ID_FORMATS = (
    (r"gguf", "gguf"),
    (r"faster-whisper|faster-distil-whisper|[-_]ct2($|[-_])", "ctranslate2"),
    (r"[-_]mlc$", "mlc"),
    (r"[-_]onnx$", "onnx"),
    (r"[-_]mlx$|^mlx-community/", "mlx"),
    # Qdrant publishes models for its fastembed runtime: ONNX exports, and BM25 term
    # statistics with no network at all (Qdrant/bm25, which listings call transformers).
    (r"^qdrant/", "fastembed"),
)
FORMATS.setdefault("mlc", "mlc (MLC-LLM weights)")
FORMATS.setdefault("fastembed", "fastembed (Qdrant's ONNX models and BM25 statistics)")


class NotPytorchError(SweeperError):
    """The repo holds a format the PyTorch device cannot run as is (gguf, onnx, ...)."""

    reason_kind = ReasonKind.NOT_PYTORCH


def gguf_base(model_id: str) -> str | None:
    """The base architecture (transformers model_type) a GGUF repo's id names, or None."""
    name = model_id.lower().rsplit("/", 1)[-1]
    for base, pattern in _BASES:
        if re.search(pattern, name):
            return base
    return None


def not_pytorch(ref: ModelRef) -> NotPytorchError | None:
    """The error naming ``ref``'s format when it is not a PyTorch model, else None."""
    library = (ref.library_name or "").lower()
    fmt = FORMATS.get(library)
    if fmt is None and library in ("", "transformers"):
        name = ref.model_id.lower()
        fmt = next((FORMATS[f] for pattern, f in ID_FORMATS if re.search(pattern, name)), None)
    if fmt is None:
        return None
    message = f"not a PyTorch model: {fmt}"
    if fmt.startswith("gguf"):
        base = gguf_base(ref.model_id)
        message += f"; packages the {base!r} architecture (from the id)" if base else "; base architecture not named by the id"
    return NotPytorchError(message, op=fmt.split(" ")[0])
