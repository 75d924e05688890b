"""Scheduling at catalog scale: 55,000 models through Ray into the real store, each once.

A trivial check function: this tests the window, the actors and the store, not torch.
The store's per-record fsync is patched out: it guards against power loss (which no test
simulates; a SIGKILLed driver loses nothing written and flushed) and 55,000 of them take
minutes on a shared disk. Everything else in the store runs as in a sweep.
"""

from __future__ import annotations

import os
import resource
import time

from executor_faults import trivial_check

from sweeper.executors.ray import RayExecutor
from sweeper.settings.config import SweepConfig
from sweeper.sources.catalog import CatalogSource
from sweeper.storage.store import RecordStore


def test_55k_models_stream_through_ray_into_the_store_once_each(ray_session, hub_2022_csv, tmp_path, monkeypatch):
    monkeypatch.setattr(os, "fsync", lambda fd: None)
    fed: list[str] = []

    def refs():
        for ref in CatalogSource(hub_2022_csv).refs():
            fed.append(ref.key)
            yield ref

    cfg = SweepConfig.of(executor="ray", workers=2, worker_max_models=100_000, max_in_flight=512)
    ex = RayExecutor(cfg)
    in_flight_seen: list[int] = []
    store = RecordStore(tmp_path).open()

    def on_record(record):
        store.append(record)
        in_flight_seen.append(len(fed) - len(in_flight_seen) - 1)

    started = time.monotonic()
    try:
        ex.run(refs(), cfg, check=trivial_check, on_record=on_record)
    finally:
        ex.close()
        store.close()
    elapsed = time.monotonic() - started
    assert len(fed) > 50_000
    assert len(in_flight_seen) == len(fed)  # one on_record per ref
    assert store.done_keys() == set(fed)
    assert max(in_flight_seen) <= 512  # never more refs pulled than the window holds
    peak_mib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"\n55k scheduling: {len(fed)} models in {elapsed:.1f}s, driver peak RSS {peak_mib:.0f} MiB")
