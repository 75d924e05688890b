"""trnsim's own random numbers: a generator of the device, not the CPU's.

Every accelerator draws from a generator of its own: ``torch.manual_seed(s)`` seeds it, but
its numbers for ``s`` are not the CPU's. trnsim does the same, so the CPU-only suite meets
what a real device shows (a model that draws in forward gives another output on the
device): random ops reaching trnsim with no generator of their own run their host kernel
on trnsim's stream, seeded from the same seed through another mapping.

``torch.Generator(device="trnsim")`` cannot be made for a Python backend, so the stream is
a CPU generator whose state is swapped into the host's default generator for the length
of one random op (a few kB copied, only for the ops PyTorch tags
``nondeterministic_seeded``).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import torch

# The stream for seed s is seeded with (s * A + B) mod 2**64: another stream than the
# CPU's for every seed, as a GPU's Philox stream is.
_MULTIPLIER = 0x9E3779B97F4A7C15
_INCREMENT = 0x632BE59BD9B4E019
_STREAM: dict[str, torch.Generator] = {}


def stream_seed(seed: int) -> int:
    """The seed of trnsim's stream for a ``torch.manual_seed`` value."""
    return (int(seed) * _MULTIPLIER + _INCREMENT) % 2**64


def manual_seed(seed: int) -> None:
    """Seed trnsim's stream (``torch.manual_seed`` calls this through ``torch.trnsim``)."""
    generator = _STREAM.get("gen") or torch.Generator()
    generator.manual_seed(stream_seed(seed))
    _STREAM["gen"] = generator


def _generator() -> torch.Generator:
    if "gen" not in _STREAM:
        manual_seed(torch.initial_seed())
    return _STREAM["gen"]


@contextlib.contextmanager
def drawing() -> Iterator[None]:
    """Host kernels inside the block draw from trnsim's stream; the host's generator is
    left as it was."""
    host, stream = torch.default_generator, _generator()
    saved = host.get_state()
    host.set_state(stream.get_state())
    try:
        yield
    finally:
        stream.set_state(host.get_state())
        host.set_state(saved)
