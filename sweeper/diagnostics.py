"""A lowering-tool diagnostic in one normalised line: the signature two failures share
exactly when they are the same bug.

A record's lowering-tool message carries the verdict's fixed words, the reproducer's path
and the tool's full diagnostic, whose first telling line names what failed (the
legalisation of ``torch.constant.int``, a verifier's ``feature_group_count``, an importer's
``TypeError``). The signature is that line without the tool's boilerplate, the MLIR value
dump after it and the numbers in it (shapes, SSA names, group counts), so the same failure
reads the same in every model and every dtype, and a reproducer's own diagnostic can be
compared with the failure it was written for.
"""

from __future__ import annotations

import re

FULL_DIAGNOSTIC = "\nfull diagnostic:\n"
SIGNATURE_CHARS = 160

# Lines the lowering tool prints around every diagnostic: they tell no failure from another.
_BOILERPLATE = re.compile(
    r"^(TorchMlirCompilerError: Lowering Torch Backend IR -> StableHLO Backend IR failed with the following"
    r"|python exception: Failure while executing pass pipeline|For Torch-MLIR developers|\$ torch-mlir-opt"
    r"|Add '-mlir-print-ir-after-all|reproducer: )"
)
_WHERE = re.compile(r"^(?:\w+: )?(?:forward|backward|inference) graph: ")
# An exception's type names the failure only when it is a plain Python error in the tool.
_TOOL_EXCEPTION = re.compile(r"^(?:TorchMlirCompilerError|RuntimeError|Exception): ")
_VALUE_DUMP = re.compile(r":\s*%[\w.#:]+ = .*$")
_NUMBER = re.compile(r"-?\d+")
# A tensor type's element type after its sizes (``tensor<2x3xf32>``, ``xbf16``): the dtype
# a model ran in is no part of the bug.
_ELEMENT = re.compile(r"x(?:bf|f|si|ui|i)N(?=[>'])")


def diagnostic_lines(message: str | None) -> list[str]:
    """The tool's own lines of a message (its full diagnostic when the message carries one),
    without the boilerplate every diagnostic repeats."""
    text = message or ""
    _, found, full = text.partition(FULL_DIAGNOSTIC)
    body = full if found else text
    return [line.strip() for line in body.splitlines() if line.strip() and not _BOILERPLATE.match(line.strip())]


def signature(message: str | None) -> str:
    """The failure's normalised first line (``failed to legalize operation
    'torch.constant.int'``), '' when the message holds none."""
    lines = diagnostic_lines(message)
    if not lines:
        return ""
    first = _TOOL_EXCEPTION.sub("", _WHERE.sub("", lines[0]))
    first = _ELEMENT.sub("xT", _NUMBER.sub("N", _VALUE_DUMP.sub("", first))).strip()
    return first if len(first) <= SIGNATURE_CHARS else first[: SIGNATURE_CHARS - 1] + "…"
