"""Paths of the machine a sweep ran on, taken out of what the sweep writes.

A published report must work on another machine and say nothing of the one that made it.
Error texts carry such paths (Torch-MLIR names its ``/tmp/UnnammedModule.mlir``, a
traceback its ``site-packages`` file, a message the user's catalog or model folder), so
every text that leaves the process through the redactor's file boundary (records,
``sweep.json``, report files, published copies) passes ``strip_machine_paths``:

- a path under a known place keeps its part below it: ``<site-packages>/torch/...``,
  ``<python>/...`` (the interpreter's prefix), ``./...`` (the working folder),
  ``<tmp>/...``, ``~/...`` (the home folder);
- any other absolute path whose top folder exists here keeps its file name: ``…/x.csv``.

A path is a run of path characters after a slash that no word, dot or colon precedes, with
at least two parts: ``org/model`` ids, ``it/s`` rates, URLs and ``aten::`` names stay whole.
"""

from __future__ import annotations

import functools
import os
import re
import site
import sys
import sysconfig
import tempfile

ELSEWHERE = "…"
# Absolute POSIX paths of two parts or more; what precedes the first slash must not make it
# part of a word, a relative path or a URL.
_PATH = re.compile(r"(?<![\w.:/~<>…\-])/(?:[\w.+@%=-]+/)+[\w.+@%=-]*")


def strip_machine_paths(text: str) -> str:
    """``text`` with each absolute path of this machine made relative to a named place."""
    if "/" not in text:
        return text
    places, tops = _places(os.getcwd(), os.path.expanduser("~"), tempfile.gettempdir())
    return _PATH.sub(lambda m: _replace(m.group(0), places, tops), text)


def _replace(path: str, places: tuple[tuple[str, str], ...], tops: frozenset[str]) -> str:
    for prefix, name in places:
        if path == prefix:
            return name
        if path.startswith(prefix + "/"):
            return name + path[len(prefix):]
    top = path.split("/", 2)[1]
    if top in tops:
        return f"{ELSEWHERE}/{path.rstrip('/').rsplit('/', 1)[-1]}"
    return path  # not a folder of this machine: a URL's path, an API route


@functools.lru_cache(maxsize=8)
def _places(cwd: str, home: str, tmp: str) -> tuple[tuple[tuple[str, str], ...], frozenset[str]]:
    """(prefix, what stands for it), the longest prefix first; and the top folders of ``/``."""
    named: dict[str, str] = {}

    def add(path: str | None, name: str) -> None:
        if not path or path == "/" or not os.path.isabs(path):
            return
        for form in {os.path.normpath(path), os.path.realpath(path)}:
            if form != "/":
                named.setdefault(form, name)

    site_dirs = [*site.getsitepackages(), site.getusersitepackages(), sysconfig.get_path("purelib"), sysconfig.get_path("platlib")]
    for path in site_dirs:
        add(path, "<site-packages>")
    for path in (sys.prefix, sys.base_prefix, sys.exec_prefix):
        add(path, "<python>")
    add(tmp, "<tmp>")
    add(cwd, ".")
    add(home, "~")
    places = tuple(sorted(named.items(), key=lambda item: len(item[0]), reverse=True))
    try:
        tops = frozenset(entry for entry in os.listdir("/") if os.path.isdir(os.path.join("/", entry)))
    except OSError:
        tops = frozenset()
    return places, tops
