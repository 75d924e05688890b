"""The interface every model library answers through (transformers, timm, diffusers, ...).

One ``Library`` per Hub library: whether a ref is its own, which architecture it is
(offline from the ref's fields; online from the repo's own files), how to build it (tiny,
random or pretrained weights, never remote code) with inputs and a loss worth comparing.
Stages see only the ``Built`` it returns: ``model(**inputs)`` runs it, the first float
output is what numerics compares, and ``output.loss`` (with ``has_labels``) is the loss
the backward and compile stages differentiate.
"""

from __future__ import annotations

import functools
import importlib.util
from collections.abc import Callable
from importlib import metadata
from typing import Any, ClassVar

from sweeper.libraries.built import Built
from sweeper.records import ModelRef, ReasonKind
from sweeper.settings.errors import ConfigError, SweeperError


class MissingDependencyError(SweeperError):
    """The library's Python packages are not installed (the record names them)."""

    reason_kind = ReasonKind.MISSING_DEPENDENCY


class Library:
    """One model library. Subclasses set the class attributes and override ``build``."""

    name: ClassVar[str] = ""
    # The Hub's ``library_name`` values this library owns.
    hub_names: ClassVar[frozenset[str]] = frozenset()
    # Import names this library needs (checked before building; their versions belong in
    # the fingerprint of this library's models).
    packages: ClassVar[tuple[str, ...]] = ()
    # The library_name a record gets when this library claims a row the listing names no
    # library for (``claims``): the Hub's name for it, so reports count the row as its own.
    claimed_as: ClassVar[str] = ""
    # What the user installs when ``packages`` are missing.
    install_hint: ClassVar[str] = "make install (the [libraries] extra)"
    # Whether ``build`` detects a quantized repo's method and applies it (or names why not);
    # for the others the load stage names a quantized repo as not applied.
    quantizes: ClassVar[bool] = False

    def owns(self, ref: ModelRef) -> bool:
        """Whether ``ref`` is this library's model."""
        return (ref.library_name or "") in self.hub_names

    def claims(self, ref: ModelRef) -> bool:
        """Whether ``ref``, whose listing names no library, is plainly this library's from its
        id (asked before ``owns``: transformers owns every row with no library named)."""
        return False

    def architecture(self, ref: ModelRef) -> str | None:
        """The architecture ``ref`` is, from its own fields alone (no network), or None."""
        return ref.architecture or ref.model_type

    def same_build(self, ref: ModelRef) -> Any:
        """What ``ref``'s tiny or random build depends on when that is shared by several
        repos (JSON-able; the repos then share one check), or None: the repo is its own
        check. Computed in the driver: no torch import."""
        return None

    def wraps(self, ref: ModelRef) -> ModelRef | None:
        """The ref of another library's model that ``ref``'s tiny build is, plus settings of
        its own (``ref.config``): peft's adapter on a transformers base. Repos wrapping the
        same build with the same settings share one check. None: not a wrapper."""
        return None

    def missing(self) -> list[str]:
        """The ``packages`` that cannot be imported here."""
        return [p for p in self.packages if not _importable(p)]

    def require(self) -> None:
        """Raise ``MissingDependencyError`` naming every missing package."""
        missing = self.missing()
        if missing:
            raise MissingDependencyError(
                f"{self.name} models need {', '.join(missing)} (not installed; {self.install_hint})", op=missing[0]
            )

    def build(self, ref: ModelRef, cfg: Any) -> Built:
        """``ref`` built per ``cfg.materialise.weights`` with its inputs; raises SweeperError
        subclasses on known failures."""
        raise NotImplementedError


def _importable(package: str) -> bool:
    try:
        return importlib.util.find_spec(package) is not None
    except ModuleNotFoundError:  # a dotted name whose parent is missing (pyannote.audio)
        return False


@functools.cache
def package_version(name: str) -> str:
    """The installed version of distribution ``name``, or ``absent``."""
    try:
        return metadata.version(name)
    except (metadata.PackageNotFoundError, ValueError):
        return "absent"


def with_loss(model: Any, loss: Callable[[Any, dict[str, Any]], Any], *, keys: tuple[str, ...] = ()) -> Any:
    """``model`` wrapped so that its output carries ``loss`` (a gradient worth comparing,
    where the mean of the outputs would not be): ``keys`` are the inputs that go to the
    loss, not the model (targets)."""
    import torch
    from transformers.utils import ModelOutput

    class WithLoss(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.model = model

        def forward(self, **inputs: Any) -> Any:
            targets = {k: inputs.pop(k) for k in keys if k in inputs}
            output = self.model(**inputs)
            return ModelOutput(output=_first(output), loss=loss(output, targets))

    wrapped = WithLoss()
    wrapped.train(model.training)
    return wrapped


def _first(output: Any) -> Any:
    """The output numerics compares: the tensor itself, or a dict/tuple's first float."""
    from sweeper.libraries.outputs import first_float

    found = first_float(output)
    return found if found is not None else output


def weights_unless_pickled(ref: ModelRef, cfg: Any, library: str, files: str) -> str:
    """The sweep's weights mode for ``ref``; ``pretrained`` is refused for a library whose
    checkpoints are pickles (``files``), which sweeper never loads."""
    weights: str = cfg.materialise.weights
    if weights == "pretrained":
        raise ConfigError(f"{ref.model_id}: {library} checkpoints are pickles ({files}), "
                          "which sweeper does not load; use tiny or random weights")
    return weights


def count_parameters(model: Any) -> int:
    """The number of parameters of a module."""
    return sum(p.numel() for p in model.parameters())


def seeded_build(fn: Callable[[], Any], seed: int) -> Any:
    """``fn()`` under ``seed`` (random init reproducible), in eval mode (as the
    transformers path seeds: the global generator, set before the build)."""
    import torch

    torch.manual_seed(seed)
    return fn().eval()
