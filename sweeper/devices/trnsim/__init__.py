"""trnsim: a simulated PrivateUse1 accelerator that refuses what the real chip refuses.

Importing this package registers the device (idempotent): afterwards plain PyTorch code can
use ``"trnsim"`` like any device. Math runs on the host CPU without copies; the capability
profile (``configs/devices/trnsim.toml``) decides which dtypes, ops and features it accepts.
"""

from __future__ import annotations

from sweeper.devices.trnsim.backend import apply_profile, ensure_registered
from sweeper.devices.trnsim.errors import (
    DynamicShapeError,
    LoweringError,
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
    "LoweringError",
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
