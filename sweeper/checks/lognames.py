"""Dynamo without the function-name lookups only its debug logs print.

For every op it puts in a graph, Dynamo builds a "file:line in function (Class.method)"
header for its ``trace_call`` debug log, eagerly, logged or not; the qualified name comes
from tokenizing the whole source file the first time a line of it is traced. A sweep
traces a new modeling file for almost every check, so each check paid for tokenizing
its files (2,000-5,000 lines each) for a string nobody reads: 5 % of the compile stage
(py-spy over ten top-1,000 checks, ``benchmarks/compile_profile.py``). Within
``names_when_logged()`` the lookup runs only while that log (or ``trace_source``) is on at
debug level (``TORCH_LOGS=trace_call``); graphs, guards, graph-break reasons and stack
traces are built as before.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Callable, Iterator
from typing import Any


@contextlib.contextmanager
def names_when_logged() -> Iterator[None]:
    """Run the block with Dynamo's function-name lookup done only for its debug logs."""
    try:
        from torch._dynamo import symbolic_convert
    except ImportError:  # a torch without Dynamo: nothing to spare
        yield
        return
    original: Callable[[str, int], Any] | None = getattr(symbolic_convert, "get_funcname", None)
    logs = [getattr(symbolic_convert, name, None) for name in ("trace_call_log", "trace_source_log")]
    if original is None or any(not isinstance(log, logging.Logger) for log in logs):
        yield  # another torch's layout: leave it as it is
        return

    def get_funcname(filename: str, lineno: int) -> str | None:
        if any(log.isEnabledFor(logging.DEBUG) for log in logs):  # type: ignore[union-attr]
            return original(filename, lineno)
        return None

    symbolic_convert.get_funcname = get_funcname
    try:
        yield
    finally:
        symbolic_convert.get_funcname = original
