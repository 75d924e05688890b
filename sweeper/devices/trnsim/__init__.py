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

import torch

# The first torch whose Python PrivateUse1 backend API (``torch._C._acc``: hooks, device
# guard, empty tensors) trnsim is written on. Below it the package says so on import, which
# ``--device trnsim`` turns into one line; cpu, cuda and plugin devices need no trnsim.
MIN_TORCH = "2.10"
if not hasattr(torch._C, "_acc"):
    raise ImportError(f"trnsim needs torch {MIN_TORCH} or newer (its PrivateUse1 backend is written in Python on "
                      f"torch._C._acc); this is torch {torch.__version__}")

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
