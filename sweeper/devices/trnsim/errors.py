"""Errors trnsim raises when the simulated chip refuses something.

Each carries ``reason_kind`` and ``op`` so the sweep's ``classify`` turns it into a record
reason without reading its message. They derive from ``SweeperError`` (for the sweep) and
from ``RuntimeError`` (so plain PyTorch code sees the kind of error a backend raises).
"""

from __future__ import annotations

from sweeper.records import ReasonKind
from sweeper.settings.errors import SweeperError, UsageError


class TrnsimError(SweeperError, RuntimeError):
    """Base of everything the simulated device refuses."""

    reason_kind = ReasonKind.UNSUPPORTED_FEATURE


class UnsupportedOpError(TrnsimError):
    """An aten op the profile refuses (``op`` is its name, e.g. ``aten::upsample_bicubic2d``)."""

    reason_kind = ReasonKind.UNSUPPORTED_OP


class UnsupportedDtypeError(TrnsimError):
    """A tensor of a dtype the chip has no format for (float64, complex)."""

    reason_kind = ReasonKind.UNSUPPORTED_DTYPE

    def __init__(self, message: str, *, op: str | None = None, dtype: str | None = None) -> None:
        super().__init__(message, op=op)
        self.dtype = dtype


class UnsupportedFeatureError(TrnsimError):
    """A feature the profile turns off: sparse, nested, forward AD, dynamic shapes."""

    reason_kind = ReasonKind.UNSUPPORTED_FEATURE

    def __init__(self, message: str, *, op: str | None = None, feature: str | None = None) -> None:
        super().__init__(message, op=op)
        self.feature = feature


class DynamicShapeError(UnsupportedFeatureError):
    """Symbolic shapes or a data-dependent output shape in a compiled graph."""

    reason_kind = ReasonKind.DYNAMIC_SHAPE


class LoweringError(TrnsimError):
    """The compiler could not legalize an op of a captured graph (``op`` names it)."""

    reason_kind = ReasonKind.COMPILE_ERROR


class LoweringToolError(LoweringError):
    """The lowering tool (Torch-MLIR) failed on an op the profile calls native: a toolchain
    finding, not a gap of the chip. The message keeps the tool's full diagnostic; ``repro``
    is the path of a standalone reproducer script, when one was written."""

    reason_kind = ReasonKind.LOWERING_TOOL_ERROR

    def __init__(self, message: str, *, op: str | None = None, repro: str | None = None) -> None:
        super().__init__(message, op=op)
        self.repro = repro


class LoweringHarnessError(TrnsimError):
    """A lowering failure the harness caused: how the graph was handed to the tool (a
    constant without storage) or what the host lacks (a package the tool needs). Our bug,
    neither the chip's nor the tool's."""

    reason_kind = ReasonKind.HARNESS


class LoweringLimitError(TrnsimError):
    """The lowering of a graph, host-side work, ran past its time or memory limit. Kind
    ``timeout`` or ``oom`` at the compile stage, which the sweep never counts as the
    device's (``origins.on_host``)."""

    reason_kind = ReasonKind.OOM

    def __init__(self, message: str, *, timed_out: bool) -> None:
        super().__init__(message)
        if timed_out:
            self.reason_kind = ReasonKind.TIMEOUT


class ProfileError(UsageError, ValueError):
    """A capability profile that cannot be loaded (bad TOML, unknown op, bad policy).

    A ``UsageError``: the CLI prints it on one line, before any model runs.
    """


class LateRegistrationError(SweeperError, RuntimeError):
    """trnsim was registered after this process ran its first backward pass.

    Not a refusal of the chip: PyTorch's autograd engine sizes its per-device queues once,
    at the first backward, so a backend registered later can never run one.
    """

    reason_kind = ReasonKind.HARNESS
