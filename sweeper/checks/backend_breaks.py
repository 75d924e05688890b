"""Graph breaks Dynamo adds when the backend compiler raises, which its counters leave out.

When AOT autograd cannot trace a graph (a fake-tensor exception: ``aten.nonzero`` in the
backward of a boolean-mask assignment), Dynamo warns "Backend compiler exception ...
Adding a graph break" and runs that frame eagerly, but ``counters["graph_break"]`` does
not count it. A user sees those frames run uncompiled, so the compile stage counts them
with the rest, each as ``Backend compiler exception (aten::nonzero)``.
"""

from __future__ import annotations

import contextlib
import re
from collections import Counter
from collections.abc import Iterator
from typing import Any

_OP = re.compile(r"\b(aten|prims)\.(\w+)")


def cause_of(exc: BaseException) -> str:
    """``Backend compiler exception`` with the op the exception names, if any."""
    op = _OP.search(str(exc))
    return f"Backend compiler exception ({op[1]}::{op[2]})" if op else "Backend compiler exception"


@contextlib.contextmanager
def counted(into: Counter[str]) -> Iterator[None]:
    """Count, by cause, the frames Dynamo falls back from after a backend exception."""
    from torch._dynamo import output_graph

    original = getattr(output_graph, "unimplemented_with_warning", None)
    if original is None:  # another torch: nothing to count by
        yield
        return

    def counting(e: Exception, *args: Any, **kwargs: Any) -> Any:
        if kwargs.get("gb_type") == "Backend compiler exception":
            into[cause_of(e)] += 1
        return original(e, *args, **kwargs)

    output_graph.unimplemented_with_warning = counting
    try:
        yield
    finally:
        output_graph.unimplemented_with_warning = original
