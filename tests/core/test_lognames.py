"""Dynamo's function-name lookup runs only for its debug logs inside the compile stage,
and is back as it was afterwards."""

from __future__ import annotations

import logging

import pytest

symbolic_convert = pytest.importorskip("torch._dynamo.symbolic_convert")

from sweeper.checks.lognames import names_when_logged  # noqa: E402 - after the skip


def _a_function() -> int:
    return 1


LINE = _a_function.__code__.co_firstlineno + 1  # the body's line


def test_names_are_looked_up_only_while_the_trace_logs_are_on() -> None:
    original = symbolic_convert.get_funcname
    assert original(__file__, LINE) == "_a_function"
    with names_when_logged():
        assert symbolic_convert.get_funcname(__file__, LINE) is None  # logs off: nothing read
        level = symbolic_convert.trace_call_log.level
        symbolic_convert.trace_call_log.setLevel(logging.DEBUG)
        try:
            assert symbolic_convert.get_funcname(__file__, LINE) == "_a_function"
        finally:
            symbolic_convert.trace_call_log.setLevel(level)
    assert symbolic_convert.get_funcname is original
