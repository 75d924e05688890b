"""Which library builds a ref: the built-in ones, plus plugins from the ``sweeper.libraries``
entry-point group (like ``sweeper.devices``): an entry point names a ``Library`` subclass.

A ref of a format that is not PyTorch (gguf, onnx, ...) gets ``NotPytorchError``; a
library no one registered, ``UnsupportedLibraryError``.
"""

from __future__ import annotations

import functools
from importlib.metadata import entry_points

from sweeper.libraries.base import Library
from sweeper.libraries.formats import not_pytorch
from sweeper.libraries.undriven import why_not_driven
from sweeper.records import ModelRef
from sweeper.settings.errors import UnsupportedLibraryError

ENTRY_POINT_GROUP = "sweeper.libraries"
_REGISTERED: dict[str, Library] = {}


def register(library: type[Library] | Library) -> type[Library] | Library:
    """Add a library (usable as a class decorator); a later one of the same name wins."""
    instance = library() if isinstance(library, type) else library
    _REGISTERED[instance.name] = instance
    libraries.cache_clear()
    return library


@functools.cache
def libraries() -> tuple[Library, ...]:
    """Every library: built-in first (in registration order), then plugins."""
    from sweeper.libraries.builtin import BUILTIN

    for library in BUILTIN:
        if library.name not in _REGISTERED:
            _REGISTERED[library.name] = library()
    for point in entry_points(group=ENTRY_POINT_GROUP):
        try:
            found = point.load()
        except Exception:  # noqa: BLE001 - a broken plugin must not break every sweep
            continue
        if found not in _REGISTERED.values() and getattr(found, "name", "") not in _REGISTERED:
            register(found)
    return tuple(_REGISTERED.values())


def library_for(ref: ModelRef) -> Library:
    """The library that builds ``ref``; raises NotPytorchError / UnsupportedLibraryError.
    The format comes first: a GGUF repo the listing calls transformers is still GGUF."""
    found = not_pytorch(ref)
    if found is not None:
        raise found
    for library in libraries():
        if library.claims(ref):
            return library
    for library in libraries():
        if library.owns(ref):
            return library
    why = why_not_driven(ref.library_name or "")
    if why is not None:
        raise UnsupportedLibraryError(f"library {ref.library_name!r} is not driven: {why}")
    names = ", ".join(sorted(lib.name for lib in libraries()))
    raise UnsupportedLibraryError(f"library {ref.library_name!r} is not supported (supported: {names})")


def library_name_of(ref: ModelRef) -> str | None:
    """The listing's library name for ``ref``, or, when it names none and a library claims
    the row from its id, that library's Hub name (records and fingerprints use it)."""
    if ref.library_name:
        return ref.library_name
    for library in libraries():
        if library.claimed_as and library.claims(ref):
            return library.claimed_as
    return ref.library_name


def supported_names() -> frozenset[str]:
    """Every Hub ``library_name`` some registered library owns."""
    return frozenset(name for lib in libraries() for name in lib.hub_names)


def get(name: str) -> Library:
    """The registered library called ``name``."""
    for library in libraries():
        if library.name == name:
            return library
    raise KeyError(name)
