"""Fewer full garbage collections while torch.compile traces a model.

Dynamo and AOT autograd allocate hundreds of thousands of short-lived Python objects per
compile; enough survive the young generations that CPython starts a full collection once or
twice per compile, each walking every object the model and its run left unfrozen (0.15-0.3 s
measured on a tiny Llama; the young collections cost a tenth of that). Within
``fewer_full_collections()``, the young generations are collected as usual (short-lived
cycles still go) and a full collection needs ten times as many young ones as usual: a tiny
model's compile (15-45 of them) runs without any, a long compile (Inductor, a large model)
still gets one now and then, so its memory stays bounded. After the block the threshold is
restored; the next collection, or the worker's between models, takes what is left.
"""

from __future__ import annotations

import contextlib
import gc
from collections.abc import Iterator

# Generation-1 collections between two full ones: CPython's default is 10.
PAUSED_FULL_THRESHOLD = 100


@contextlib.contextmanager
def fewer_full_collections() -> Iterator[None]:
    """Run the block with full collections deferred (young ones unchanged)."""
    young, middle, full = gc.get_threshold()
    gc.set_threshold(young, middle, max(full, PAUSED_FULL_THRESHOLD))
    try:
        yield
    finally:
        gc.set_threshold(young, middle, full)
