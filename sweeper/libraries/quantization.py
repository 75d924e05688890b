"""Quantized checkpoints: which method a repo ships, named before anything is built.

A quantized repo runs through its method's kernels (bitsandbytes' dequantise and 4-bit
matmul, gptqmodel's GPTQ/AWQ kernels, compressed-tensors' scaled FP8 matmuls), which are
written per device: the float model of the same architecture is a stand-in that passes
where the user's checkpoint may not. So the method is known first — from the repo's own
``quantization_config`` where its config is at hand, else from its id, with the evidence
noted — and a record of a quantized repo either ran with the method applied or says why
not (``applied`` false, and a blocker: never a silent float run).

The record's ``quantization``: ``method``, ``bits``, ``format`` (nf4, fp4, int8, float8,
...), ``source`` (``config`` or ``id``), ``evidence``, ``package`` (the kernel package)
and its ``package_version``, ``applied`` and, when it was not, ``why``. No torch import:
the driver reads it too.
"""

from __future__ import annotations

import re
from typing import Any

from sweeper.records import ModelRef, ReasonKind
from sweeper.settings.errors import SweeperError

# quant_method (as transformers names it) -> (the package whose kernels run it, its import name).
KERNEL_PACKAGES: dict[str, tuple[str, str]] = {
    "bitsandbytes": ("bitsandbytes", "bitsandbytes"),
    "gptq": ("gptqmodel", "gptqmodel"),
    "awq": ("gptqmodel", "gptqmodel"),
    "compressed-tensors": ("compressed-tensors", "compressed_tensors"),
    "fp8": ("transformers", "transformers"),  # transformers' own fine-grained FP8 kernels
    "torchao": ("torchao", "torchao"),
    "quanto": ("optimum-quanto", "optimum.quanto"),
    "hqq": ("hqq", "hqq"),
    "eetq": ("eetq", "eetq"),
    "fbgemm_fp8": ("fbgemm-gpu", "fbgemm_gpu"),
    "aqlm": ("aqlm", "aqlm"),
    "exl2": ("exllamav2", "exllamav2"),
}

# Organisations that publish FP8 (and int) checkpoints in compressed-tensors' format.
_COMPRESSED_TENSORS_ORGS = ("neuralmagic", "nm-testing", "redhatai", "nmagic")

# Id patterns, most specific first: (pattern on the lower-cased repo name, method, bits, format).
ID_PATTERNS: tuple[tuple[str, str, int | None, str | None], ...] = (
    (r"bnb[-_]?4bit|bnb[-_]?nf4", "bitsandbytes", 4, "nf4"),
    (r"bnb[-_]?8bit|bnb[-_]?int8", "bitsandbytes", 8, "int8"),
    (r"(^|[-_.])nf4($|[-_.])", "bitsandbytes", 4, "nf4"),
    (r"gptq[-_]?int8", "gptq", 8, "int8"),
    (r"gptq", "gptq", 4, "int4"),
    (r"awq", "awq", 4, "int4"),
    (r"(^|[-_.])fp8($|[-_.])", "fp8", 8, "float8"),
    (r"w4a16", "compressed-tensors", 4, "int4"),
    (r"w8a8|w8a16", "compressed-tensors", 8, "int8"),
    # "-4bit" / "-8bit" on a PyTorch repo (MLX repos are named as MLX before this is asked):
    # bitsandbytes is transformers' on-load 4-/8-bit format.
    (r"(^|[-_.])4bit($|[-_.])", "bitsandbytes", 4, "nf4"),
    (r"(^|[-_.])8bit($|[-_.])", "bitsandbytes", 8, "int8"),
)


class QuantizationNotApplied(SweeperError):
    """A quantized repo whose method sweeper does not apply to this library's tiny build:
    our limitation, never a float run counted as the checkpoint's."""

    reason_kind = ReasonKind.HARNESS


def from_config(config: dict[str, Any] | None) -> dict[str, Any] | None:
    """The method a config's ``quantization_config`` names, or None (not quantized)."""
    found = (config or {}).get("quantization_config")
    if not isinstance(found, dict) or not found.get("quant_method"):
        return None
    method = str(found["quant_method"]).lower()  # transformers' QuantizationMethod values
    bits, fmt = _bits_and_format(method, found)
    info = {"method": method, "bits": bits, "format": fmt, "source": "config",
            "evidence": f"config.json quantization_config.quant_method = {found['quant_method']!r}"}
    for key in ("group_size", "bnb_4bit_use_double_quant", "version", "weight_block_size"):
        if key in found:
            info[key] = found[key]
    return info


def from_id(model_id: str) -> dict[str, Any] | None:
    """The method a repo's id names, or None. Offline: the evidence is the part of the id."""
    org, _, name = model_id.lower().rpartition("/")
    for pattern, method, bits, fmt in ID_PATTERNS:
        match = re.search(pattern, name)
        if match is None:
            continue
        if method == "fp8" and (org in _COMPRESSED_TENSORS_ORGS or "nmagic" in name):
            method = "compressed-tensors"
        return {"method": method, "bits": bits, "format": fmt, "source": "id",
                "evidence": f"the id says {match.group(0).strip('-_.')!r}"}
    return None


def detect(ref: ModelRef, config: dict[str, Any] | None = None) -> dict[str, Any] | None:
    """``ref``'s quantization (its config first, then its id) with its kernel package, or None."""
    info = from_config(config if config is not None else ref.config) or from_id(ref.model_id)
    if info is None:
        return None
    package, _ = KERNEL_PACKAGES.get(info["method"], (info["method"], info["method"]))
    from sweeper.libraries.base import package_version

    return {**info, "package": package, "package_version": package_version(package), "applied": False}


def importable(method: str) -> bool:
    """Whether the kernel package of ``method`` can be imported here."""
    import importlib.util

    module = KERNEL_PACKAGES.get(method, (method, method))[1]
    try:
        return importlib.util.find_spec(module) is not None
    except ModuleNotFoundError:
        return False


def not_applied(info: dict[str, Any], library: str, applies: frozenset[str]) -> SweeperError:
    """The error of a quantized repo whose method is not applied: the kernel package missing
    (``missing_dependency`` naming it), or a method this library's builder does not apply
    (the harness's). It carries ``info`` (``applied`` false, ``why``) for the record."""
    from sweeper.libraries.base import MissingDependencyError

    method, package = info["method"], info["package"]
    if method in applies and not importable(method):
        why = f"{method} checkpoints need {package} (not installed; make install, the [quantization] extra)"
        error: SweeperError = MissingDependencyError(why, op=package)
    elif method not in applies and not importable(method):
        why = f"{method} checkpoints need {package}, which is not installed and which sweeper does not yet apply to {library} builds"
        error = MissingDependencyError(why, op=package)
    else:
        why = f"sweeper does not yet apply {method} quantization to {library} builds"
        error = QuantizationNotApplied(why, op=package)
    return carrying(error, info, why)


def carrying(error: SweeperError, info: dict[str, Any], why: str) -> SweeperError:
    """``error`` carrying the record's ``quantization`` (``applied`` false, ``why``): the
    load stage puts it on the record of a build that did not happen."""
    error.quantization = {**info, "applied": False, "why": why}  # type: ignore[attr-defined]
    return error


def _bits_and_format(method: str, config: dict[str, Any]) -> tuple[int | None, str | None]:
    """Bits and number format a ``quantization_config`` says."""
    if method == "bitsandbytes":
        if config.get("load_in_4bit"):
            return 4, str(config.get("bnb_4bit_quant_type") or "fp4")
        if config.get("load_in_8bit"):
            return 8, "int8"
        return None, None
    if method in ("gptq", "awq"):
        bits = config.get("bits") or config.get("w_bit")
        return (int(bits) if bits else None), (f"int{bits}" if bits else None)
    if method in ("fp8", "fbgemm_fp8"):
        return 8, "float8"
    if method == "compressed-tensors":
        for group in (config.get("config_groups") or {}).values():
            weights = (group or {}).get("weights") or {}
            if weights.get("num_bits"):
                kind = "float" if weights.get("type") == "float" else "int"
                return int(weights["num_bits"]), f"{kind}{weights['num_bits']}"
        return None, config.get("format")
    bits = config.get("bits") or config.get("nbits") or config.get("weights")
    return (bits if isinstance(bits, int) else None), (str(bits) if bits and not isinstance(bits, int) else None)


def import_without_hub_kernels() -> None:
    """Import bitsandbytes with the ``kernels`` package hidden.

    On a CPU with AVX512-BF16, importing bitsandbytes asks the Hub for a compiled kernel
    (``kernels-community/quantization-bitsandbytes``) and would run it: code from the Hub,
    which a sweep never runs (remote code is off), and a network call in every worker.
    Hidden, bitsandbytes uses its own kernels, as it does without the package.
    """
    import sys

    if "bitsandbytes" in sys.modules:
        return
    hidden = sys.modules.get("kernels", _ABSENT)
    sys.modules["kernels"] = None  # type: ignore[assignment]  # import kernels -> ImportError
    try:
        import bitsandbytes  # noqa: F401
    finally:
        if hidden is _ABSENT:
            del sys.modules["kernels"]
        else:
            sys.modules["kernels"] = hidden


_ABSENT = object()
