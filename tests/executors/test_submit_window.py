"""Window: bounded, lazy submission; adaptive chunks; retries counted only for running calls."""

from __future__ import annotations

import itertools

from sweeper.executors.window import MAX_CHUNK, Call, Window
from sweeper.records import ModelRef


def _refs():
    for i in itertools.count(1):
        yield ModelRef(model_id=f"m{i}", rank=i)


def test_pulls_lazily_and_never_past_the_cap():
    source = _refs()
    w = Window(source, workers=2, max_in_flight=10, retries=1)
    taken = [w.take() for _ in range(20)]
    assert sum(len(c) for c in taken) == 10  # full: further takes are empty
    assert next(source).model_id == "m11"  # nothing was read ahead of the window


def test_chunks_grow_for_fast_models_and_stay_single_for_slow_ones():
    w = Window(_refs(), workers=2, max_in_flight=None, retries=0)
    first = w.take()
    assert len(first) == 1
    w.done(Call(first, worker=0, submitted=0.0, started=0.0), now=0.001)
    assert w.chunk_size == MAX_CHUNK
    slow = Window(_refs(), workers=2, max_in_flight=None, retries=0)
    c = slow.take()
    slow.done(Call(c, worker=0, submitted=0.0, started=0.0), now=5.0)
    assert slow.chunk_size == 1


def test_requeue_counts_only_calls_that_ran_and_gives_up_past_retries():
    w = Window(iter([ModelRef("a", 1), ModelRef("b", 2)]), workers=1, max_in_flight=None, retries=1)
    call = Call(w.take(), worker=0, submitted=0.0)
    assert w.requeue(call, ran=False) == []  # queued behind a lost call: free
    call = Call(w.take(), worker=0, submitted=0.0)
    assert call.refs[0].model_id == "a"  # retries go first
    assert w.requeue(call, ran=True) == []
    call = Call(w.take(), worker=0, submitted=0.0)
    assert [(r.model_id, n) for r, n in w.requeue(call, ran=True)] == [("a", 2)]
    assert w.in_flight == 0
    assert [r.model_id for r in w.take()] == ["b"]
    assert w.take() == [] and w.drained
