"""Compile a small C++ library against the installed torch, once, and cache it.

trnsim's native parts (the device guard, the eager fast path) are built on first use with
the system C++ compiler and the torch headers, and cached per torch build and source under
``TRNSIM_GUARD_CACHE`` (default ``~/.cache/sweeper/trnsim-guard``). Written atomically, so
workers starting together never load a half-written file.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

import torch


def torch_dir() -> Path:
    """Where the installed torch lives (headers under include/, libraries under lib/)."""
    return Path(torch.__file__).resolve().parent


def cache_dir() -> Path:
    """The folder compiled libraries are cached in."""
    return Path(os.environ.get("TRNSIM_GUARD_CACHE") or Path.home() / ".cache" / "sweeper" / "trnsim-guard")


def compiled(name: str, source: str, libraries: tuple[str, ...], *, std: str = "c++17") -> Path:
    """The cached shared library built from ``source`` (compiled first when missing);
    ``RuntimeError`` when there is no compiler or the build fails."""
    tdir = torch_dir()
    abi = int(torch._C._GLIBCXX_USE_CXX11_ABI)
    key = hashlib.sha256(f"{source}{torch.__version__}{tdir}{abi}{std}{libraries}".encode()).hexdigest()[:16]
    cache = cache_dir()
    target = cache / f"{name}_{key}.so"
    if target.exists():
        return target
    compiler = os.environ.get("CXX") or shutil.which("c++") or shutil.which("g++")
    if not compiler:
        raise RuntimeError("no C++ compiler (c++ or g++) on PATH")
    cache.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=cache) as tmp:
        src, out = Path(tmp) / f"{name}.cpp", Path(tmp) / f"{name}.so"
        src.write_text(source)
        lib_dir = tdir / "lib"
        cmd = [compiler, "-O2", "-shared", "-fPIC", f"-std={std}", f"-D_GLIBCXX_USE_CXX11_ABI={abi}",
               f"-I{tdir / 'include'}", f"-I{tdir / 'include' / 'torch' / 'csrc' / 'api' / 'include'}",
               str(src), "-o", str(out), f"-L{lib_dir}", "-Wl,--no-as-needed",
               *(f"-l{lib}" for lib in libraries), f"-Wl,-rpath,{lib_dir}"]
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
        if done.returncode != 0:
            raise RuntimeError(f"compiling {name} failed: {done.stderr.strip()[-300:]}")
        os.replace(out, target)
    return target
