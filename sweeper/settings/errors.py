"""Errors the sweeper raises on purpose.

``UsageError`` is bad user input: the CLI prints its message on one line and exits 2.
``SweeperError`` subclasses may carry ``reason_kind`` (and ``op``) so that ``classify``
turns them into a record reason without reading their message. Device plugins may raise
their own exceptions with the same two attributes.
"""

from __future__ import annotations

from sweeper.records import ReasonKind


class UsageError(Exception):
    """Bad input from the user (unknown device, bad catalog, bad flag value)."""


class SweeperError(Exception):
    """An expected failure of a model, with the reason it stands for."""

    reason_kind: ReasonKind = ReasonKind.HARNESS
    op: str | None = None

    def __init__(self, message: str, *, op: str | None = None) -> None:
        super().__init__(message)
        if op is not None:
            self.op = op


class InputSynthesisError(SweeperError):
    """A forward argument the rules cannot build; the message names it."""

    reason_kind = ReasonKind.INPUT_SYNTHESIS


class UnsupportedLibraryError(SweeperError):
    """The model belongs to a library the sweeper cannot build (diffusers, gguf, ...)."""

    reason_kind = ReasonKind.UNSUPPORTED_LIBRARY


class RemoteCodeError(SweeperError):
    """The model needs ``trust_remote_code`` and the sweep does not allow it."""

    reason_kind = ReasonKind.REMOTE_CODE


class ConfigError(SweeperError):
    """The model's configuration cannot be built (broken upstream default, bad config)."""

    reason_kind = ReasonKind.CONFIG_ERROR


class NoGradientError(SweeperError):
    """Backward ran but no parameter received a gradient."""

    reason_kind = ReasonKind.NO_GRADIENT


class NumericsError(SweeperError):
    """Device outputs differ from the CPU reference beyond tolerance."""

    reason_kind = ReasonKind.NUMERICS


class NonFiniteReferenceError(SweeperError):
    """The CPU reference itself has NaN: the model's result, not the device's (a CPU
    control cannot overturn it: the CPU run is the evidence)."""

    reason_kind = ReasonKind.NONFINITE_REFERENCE


class GraphBreakError(SweeperError):
    """Compilation produced graph breaks and the sweep treats them as failures."""

    reason_kind = ReasonKind.GRAPH_BREAK
