"""Make PyPI's torchaudio importable beside the CPU torch the project pins.

PyPI's torchaudio wheels (2.11, the newest; it requires only ``torch>=2.11``) ship C++
extensions linked against CUDA torch (``libc10_cuda.so``, ``libcudart.so``): beside the CPU
torch they fail to load, and torchaudio's ``__init__`` lets that ``OSError`` through, so
``import torchaudio`` — and pyannote.audio, which imports it — fails.

What pyannote.audio's models use of torchaudio is pure PyTorch: ``compliance.kaldi.fbank``
(WeSpeaker), ``transforms.MFCC`` (x-vector), ``functional.resample``. The fix here: before
torchaudio's extension loader runs, try the extension; when it does not load, make the
loader report "not built" (torchaudio's own path for a build without extensions) instead
of raising. The ops that need the extension (``lfilter``'s fast loop has a Python
fallback; ``forced_align``, ``rnnt_loss``, the CUDA CTC decoder do not) then fail when
called, with torchaudio's own messages.

``install()`` puts a one-shot finder on ``sys.meta_path`` (``sweeper/__init__`` calls it),
as ``vision_compat`` does for torchvision: no cost in a process that never imports
torchaudio.
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import importlib.util
import sys
from pathlib import Path
from typing import Any

# "native" (the extension loaded), "compat" (loader told the extension is not built),
# "absent" (no torchaudio), or None (torchaudio not imported yet).
state: str | None = None
_UTILS = "torchaudio._extension.utils"


def _extension_loads(lib_dir: Path) -> bool:
    """Whether torchaudio's ``_torchaudio`` extension loads beside this torch."""
    import torch

    found = sorted(lib_dir.glob("_torchaudio*.so")) + sorted(lib_dir.glob("_torchaudio*.pyd"))
    if not found:
        return True  # nothing to load: torchaudio's own loader returns False, no trap
    try:
        torch.ops.load_library(str(found[0]))
        return True
    except OSError:
        return False


def _patch(utils: Any) -> None:
    """Decide ``state`` for the loaded ``torchaudio._extension.utils`` module; in compat,
    its ``_load_lib`` answers False (not built) for libraries that do not load."""
    global state
    original = utils._load_lib
    if _extension_loads(Path(utils._LIB_DIR)):
        state = "native"
        return

    def load_lib(lib: str) -> bool:
        try:
            return original(lib)
        except OSError:
            return False  # a CUDA build's library beside the CPU torch

    utils._load_lib = load_lib
    state = "compat"


class _PatchingLoader(importlib.abc.Loader):
    """Runs the real loader of ``torchaudio._extension.utils``, then ``_patch``; torchaudio's
    ``_extension/__init__`` imports ``_load_lib`` from it right after."""

    def __init__(self, loader: Any) -> None:
        self._loader = loader

    def create_module(self, spec: Any) -> Any:
        return self._loader.create_module(spec)

    def exec_module(self, module: Any) -> None:
        self._loader.exec_module(module)
        _patch(module)


class _BeforeTorchaudio(importlib.abc.MetaPathFinder):
    """Wraps the loader of torchaudio's extension utilities the first time they import."""

    def find_spec(self, name: str, path: Any = None, target: Any = None) -> Any:
        global state
        if name == "torchaudio" and importlib.machinery.PathFinder.find_spec(name, path) is None:
            state = "absent"
        if name != _UTILS:
            return None
        uninstall()
        spec = importlib.machinery.PathFinder.find_spec(name, path)
        if spec is not None and spec.loader is not None:
            spec.loader = _PatchingLoader(spec.loader)
        return spec


_FINDER = _BeforeTorchaudio()


def install() -> None:
    """Arrange for the patch to apply when torchaudio is first imported (nothing to do when
    it already is)."""
    if "torchaudio" in sys.modules:
        return
    if _FINDER not in sys.meta_path:
        sys.meta_path.insert(0, _FINDER)


def uninstall() -> None:
    """Remove the finder (applied already, or no longer wanted)."""
    if _FINDER in sys.meta_path:
        sys.meta_path.remove(_FINDER)


def extension_state() -> str:
    """``state``, importing torchaudio first when nothing has yet (``absent`` without it)."""
    if state is None and importlib.util.find_spec("torchaudio") is not None:
        import torchaudio  # noqa: F401 - the import decides the state
    return state or "absent"
