"""``TrnsimDevice``: the simulated accelerator as a sweep device."""

from __future__ import annotations

import contextlib
import dataclasses
import gc
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from sweeper.devices.base import REPROS, Device, Recording
from sweeper.devices.precision import Float32Math, strictly


class TrnsimDevice(Device):
    """``--device trnsim``: PrivateUse1 device over host memory, refusing per its profile.

    Options: ``profile`` (a shipped profile's name or a TOML path; None = ``trnsim``),
    ``collect_all`` (record every refusal as a blocker and run on instead of raising) and
    ``out_dir`` (the sweep's folder: reproducers of lowering-tool failures go to its
    ``repros/``).
    """

    name = "trnsim"
    description = "simulated Trainium-like accelerator (PrivateUse1 over the CPU; refuses per its profile)"
    needs = "nothing (torch-mlir for the compile stage's StableHLO lowering)"
    kind = "trnsim"

    def __init__(self, spec: str, **options: Any) -> None:
        super().__init__(spec, **options)
        self.profile_path: str | None = options.get("profile")
        self.collect_all = bool(options.get("collect_all", False))
        self._profile: Any = None
        out_dir = options.get("out_dir")
        self.repro_dir: str | None = str(Path(out_dir) / REPROS) if out_dir else None
        self.shared_cache: str | None = options.get("shared_cache")

    @property
    def torch_device(self) -> str:
        return "trnsim"

    @property
    def compile_backend(self) -> str:
        return "trnsim"

    def available(self) -> tuple[bool, str]:
        import torch

        current = torch._C._get_privateuse1_backend_name()
        if current not in ("privateuseone", "trnsim"):
            return False, f"this process already named PrivateUse1 {current!r}"
        return True, ""

    def setup(self) -> None:
        """Register the backend and the compile backend; load the profile (idempotent)."""
        import sweeper.devices.trnsim.compiler as compiler
        from sweeper.devices.trnsim.backend import apply_profile

        if self._profile is None:
            self._profile = self._load()
        apply_profile(self._profile)
        compiler.register_backend()
        self._share_lowerings()
        if self.repro_dir:
            import sweeper.devices.trnsim.state as state

            state.set_repro_dir(self.repro_dir)

    def _share_lowerings(self) -> None:
        """Lowering verdicts go to and come from the sweep's shared folder, keyed also by
        what decides them besides the graph: Torch-MLIR's and torch's versions, the profile."""
        import torch

        from sweeper.devices.trnsim import lowercache, lowering

        salt = f"{lowering.tool_version()}|{torch.__version__}|{self._profile.hash}"
        lowercache.configure(self.shared_cache, salt=salt)

    def warm_up(self) -> None:
        """Compile a small MLP forward + backward with the trnsim backend once: the first
        imports and set-up of Dynamo, AOT autograd and Torch-MLIR (1.5-2 s) are then not
        charged to the first model's compile stage. Outside any recording, with the RNG
        restored and Dynamo, counters and the lowering caches reset: no model sees it."""
        self.setup()
        import torch
        from torch._dynamo.utils import counters

        from sweeper.devices.trnsim import compiler, lowering, lowerserver

        if lowering.available():
            lowerserver.start()  # it imports Torch-MLIR while this process compiles the MLP
        try:
            with torch.random.fork_rng(devices=[]):
                model = torch.nn.Sequential(torch.nn.Linear(8, 8), torch.nn.GELU(), torch.nn.Linear(8, 2))
                inputs = torch.linspace(-1.0, 1.0, 32).reshape(4, 8).to("trnsim")
                torch.compile(model.to("trnsim"), backend="trnsim")(inputs).sum().backward()
        except Exception:  # noqa: BLE001 - a profile may refuse these ops; warming up is only a saving
            pass
        finally:
            torch._dynamo.reset()
            counters.clear()
            compiler.reset_lowered()
            lowering.clear_cache()

    @contextlib.contextmanager
    def recording(self) -> Iterator[Recording]:
        """Ops, host fallbacks, refusals (and blockers in collect-all mode) of the block."""
        self.setup()
        import sweeper.devices.trnsim.state as state

        seen = Recording()
        with state.recording() as rec, state.collect_all(self.collect_all):
            try:
                yield seen
            finally:  # a stage that raised still reports what ran before it failed
                state.flush_counts()
                _copy(rec, seen)

    def synchronize(self) -> None:
        """Execution is synchronous."""

    def reset_peak_memory(self) -> None:
        import sweeper.devices.trnsim.storage as storage

        storage.reset_peak_memory_stats()

    def peak_memory_bytes(self) -> int | None:
        import sweeper.devices.trnsim.storage as storage

        return storage.max_memory_allocated()

    def profile_info(self) -> dict[str, str]:
        """Name and content hash of the profile records carry."""
        if self._profile is None:
            self._profile = self._load()
        return self._profile.info()

    def tool_versions(self) -> dict[str, str]:
        """The lowering tool (Torch-MLIR) that compiles trnsim's graphs: its version decides
        every lowering-tool finding."""
        from sweeper.devices.trnsim.lowering import tool_version

        return {"torch-mlir": tool_version()}

    def float32_math(self) -> Float32Math:
        """The profile's ``[precision]`` (exact float32 under ``--strict-float32``)."""
        if self._profile is None:
            self._profile = self._load()
        return self._profile.float32_math

    @contextlib.contextmanager
    def new_shapes(self) -> Iterator[None]:
        """A recompile whose graph differs from a checked one only in its sizes runs as
        traced (``compiler.new_shapes``): the simulator's verdict on it is that graph's."""
        import sweeper.devices.trnsim.compiler as compiler

        with compiler.new_shapes():
            yield

    def accepts_symbolic_shapes(self) -> bool:
        """The profile's ``dynamic_shapes`` feature (off: each new shape compiles anew)."""
        if self._profile is None:
            self._profile = self._load()
        return bool(self._profile.allows("dynamic_shapes"))

    def _load(self) -> Any:
        """The profile, its float32 math made exact when strict float32 was asked for."""
        from sweeper.devices.trnsim.profile import load_profile

        profile = load_profile(self.profile_path)
        if self.options.get("strict_float32"):
            profile = dataclasses.replace(profile, float32_math=strictly(profile.float32_math))
        return profile

    def compile_phases(self) -> dict[str, float]:
        """The simulator's compile phases so far (``trnsim.phases``, wall seconds):
        ``aot`` (AOT autograd's own tracing), ``scan`` (the op scan), ``lowering``
        (Torch-MLIR in the lowering server or a child, and this process's work around
        it), ``server_start`` (waiting for a lowering server replaced within a check) and
        ``checks`` (the backend's own profile checks)."""
        import sweeper.devices.trnsim.phases as phases

        grouped: dict[str, float] = {}
        for name, spent in phases.snapshot().items():
            group = _PHASE_GROUPS.get(name, "lowering" if name.startswith("lower.") else name)
            grouped[group] = grouped.get(group, 0.0) + spent.wall
        return grouped

    def reset_between_models(self) -> None:
        """Drop compiled graphs and free the last model's memory."""
        import torch

        import sweeper.devices.trnsim.compiler as compiler
        import sweeper.devices.trnsim.tracefail as tracefail

        torch._dynamo.reset()
        compiler.reset_lowered()
        tracefail.forget()
        gc.collect()


# trnsim's phases (``trnsim.phases``) as the record names them.
_PHASE_GROUPS = {"backend": "checks", "cache": "lowering", "prepare": "lowering", "isolate": "lowering",
                 "import_mlir": "lowering"}


def _copy(rec: Any, seen: Recording) -> None:
    """The simulator's ``OpRecording`` into the sweep's ``Recording`` (same fields)."""
    seen.ops.update(rec.ops)
    seen.fallback_ops.update(rec.fallback_ops)
    seen.errors.extend(rec.errors)
    seen.blockers.extend(rec.blockers)
    seen.compile_problems.extend(rec.compile_problems)
