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

from __future__ import annotations

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
