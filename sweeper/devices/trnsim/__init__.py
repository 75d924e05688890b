"""trnsim: a simulated PrivateUse1 accelerator that refuses what the real chip refuses.

Importing this package registers the device (idempotent): afterwards plain PyTorch code can
use ``"trnsim"`` like any device. Math runs on the host CPU without copies; the capability
profile (``profiles/trnsim.toml``, linked from ``configs/devices``) decides which dtypes, ops and features it accepts.

    import torch, sweeper.devices.trnsim as trnsim

    model = model.to("trnsim")                  # float64 weights: UnsupportedDtypeError
    with trnsim.recording() as rec:             # rec.ops, rec.fallback_ops, rec.errors
        model(x.to("trnsim")).sum().backward()
    with trnsim.strict():                       # any host fallback raises
        ...
    torch.compile(model, backend="trnsim")      # profile checks + StableHLO via Torch-MLIR
    trnsim.apply_profile(trnsim.load_profile("my-chip.toml"))

``retie_fix()`` keeps tied weights tied across ``.to("trnsim")`` (see ``ties``).
"""

# ruff: noqa: E402 - the version check comes before the imports that need that torch

from __future__ import annotations

import os

import torch

# The torch releases trnsim is tested on (make test / make test-newest). Below 2.10 torch
# lacks the Python PrivateUse1 backend API trnsim is written on (``torch._C._acc``); on
# 2.15 a backward under AOT autograd's tracing aborts the process. Elsewhere the package
# says so on import, which ``--device trnsim`` turns into one line; cpu, cuda and plugin
# devices need no trnsim. ``SWEEPER_TRNSIM_ANY_TORCH=1`` tries another release anyway.
TESTED_TORCH = ("2.13",)
ANY_TORCH_VARIABLE = "SWEEPER_TRNSIM_ANY_TORCH"
_release = ".".join(torch.__version__.split("+")[0].split(".")[:2])
if not hasattr(torch._C, "_acc") or (_release not in TESTED_TORCH and os.environ.get(ANY_TORCH_VARIABLE) != "1"):
    raise ImportError(f"trnsim runs on torch {', '.join(TESTED_TORCH)}, the release it is tested on; this is torch "
                      f"{torch.__version__} (set {ANY_TORCH_VARIABLE}=1 to try it, from 2.10 on)")

from sweeper.devices.trnsim.backend import apply_profile, ensure_registered
from sweeper.devices.trnsim.errors import (
    DynamicShapeError,
    LateRegistrationError,
    LoweringError,
    LoweringToolError,
    ProfileError,
    TrnsimError,
    UnsupportedDtypeError,
    UnsupportedFeatureError,
    UnsupportedOpError,
)
from sweeper.devices.trnsim.profile import DEFAULT_PROFILE, Profile, load_profile
from sweeper.devices.trnsim.state import (
    OpRecording,
    active_profile,
    collect_all,
    recording,
    strict,
)
from sweeper.devices.trnsim.ties import retie_fix, untied_pairs

ensure_registered()

__all__ = [
    "DEFAULT_PROFILE",
    "DynamicShapeError",
    "LateRegistrationError",
    "LoweringError",
    "LoweringToolError",
    "OpRecording",
    "Profile",
    "ProfileError",
    "TrnsimError",
    "UnsupportedDtypeError",
    "UnsupportedFeatureError",
    "UnsupportedOpError",
    "active_profile",
    "apply_profile",
    "collect_all",
    "ensure_registered",
    "load_profile",
    "recording",
    "retie_fix",
    "strict",
    "untied_pairs",
]
