"""The capability profile: loading, validation, hashing, and switching profiles."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
import torch.nn.functional as F

from sweeper.settings.errors import UsageError

NEXT = Path(__file__).resolve().parents[2] / "configs" / "devices" / "trnsim-next.toml"


def test_default_profile_models_the_gap_list(trnsim):
    p = trnsim.load_profile(None)
    assert p.name == "trnsim-2026.08"
    assert torch.float64 not in p.dtypes and torch.complex64 not in p.dtypes
    assert {torch.float32, torch.bfloat16, torch.float16} <= p.dtypes
    # The chip lacks every feature flag; its backend keeps Parameter identity as vendors do.
    assert {f for f, on in p.features.items() if on} == {"keeps_parameter_identity"}
    for op in ("aten::_thnn_fused_lstm_cell", "aten::upsample_bicubic2d", "aten::_linalg_svd",
               "aten::index_reduce", "aten::median"):
        assert p.policy(op, "eager") == "fallback", op
        assert p.policy(op, "compile") == "error", op
    assert p.policy("aten::nonzero", "eager") == "native"
    assert p.policy("aten::nonzero", "compile") == "error"


def test_policy_resolves_overload_then_packet_then_default(trnsim):
    from sweeper.devices.trnsim.profile import parse_profile

    p = parse_profile({"name": "x", "ops": [
        {"names": ["aten::index_put"], "eager": "fallback", "compile": "error"},
        {"names": ["aten::index_put.default"], "eager": "error", "compile": "native"},
    ]})
    assert p.policy("aten::index_put.default", "eager") == "error"
    assert p.policy("aten::index_put.out", "eager") == "fallback"
    assert p.policy("aten::add.Tensor", "compile") == "native"


def test_hash_follows_content(trnsim, tmp_path):
    text = trnsim.DEFAULT_PROFILE.read_text()
    same, changed = tmp_path / "same.toml", tmp_path / "changed.toml"
    same.write_text(text)
    changed.write_text(text.replace('"aten::mode",', ""))
    assert trnsim.load_profile(same).hash == trnsim.load_profile(None).hash
    assert trnsim.load_profile(changed).hash != trnsim.load_profile(None).hash


@pytest.mark.parametrize("body, message", [
    ('name = "x"\n[[ops]]\nnames = ["aten::not_an_op"]\n', "aten::not_an_op"),
    ('name = "x"\n[[ops]]\nnames = ["aten::add.NoSuchOverload"]\n', "NoSuchOverload"),
    ('name = "x"\n[[ops]]\nnames = ["aten::add"]\neager = "maybe"\n', "maybe"),
    ('name = "x"\n[dtypes]\nsupported = ["float33"]\n', "float33"),
    ('name = "x"\n[features]\nteleport = true\n', "teleport"),
    ('[dtypes]\nsupported = ["float32"]\n', "name"),
    ("name = \n", "not valid TOML"),
])
def test_bad_profiles_fail_at_load_naming_the_problem(trnsim, tmp_path, body, message):
    path = tmp_path / "bad.toml"
    path.write_text(body)
    with pytest.raises(trnsim.ProfileError, match=message) as info:
        trnsim.load_profile(path)
    assert isinstance(info.value, UsageError)


def test_missing_profile_is_a_usage_error(trnsim, tmp_path):
    with pytest.raises(UsageError, match="not found"):
        trnsim.load_profile(tmp_path / "nope.toml")


def test_another_profile_changes_what_runs_natively(trnsim):
    from sweeper.devices.base import get_device

    x = torch.randn(1, 1, 4, 4, device="trnsim")
    dev = get_device("trnsim", profile=str(NEXT), collect_all=False)
    with dev.recording() as rec:
        F.interpolate(x, scale_factor=2, mode="bicubic")
        torch.linalg.svd(torch.randn(3, 3, device="trnsim"))
    assert dev.profile_info()["name"] == "trnsim-next"
    assert "aten::upsample_bicubic2d" not in rec.fallback_ops
    assert rec.fallback_ops["aten::_linalg_svd"] == 1
    assert trnsim.active_profile().allows("dynamic_shapes")
    with pytest.raises(trnsim.UnsupportedDtypeError):
        torch.ones(1, device="trnsim", dtype=torch.float64)


def test_a_shipped_profile_is_named_by_its_name_in_flags_and_repros(tmp_path):
    """A wheel's user has no configs/ folder: the shipped profiles are reached by name."""
    from sweeper.checks.repro import repro_command
    from sweeper.devices.trnsim.profile import SHIPPED_PROFILES, load_profile, shipped_profiles
    from sweeper.records import ModelRef
    from sweeper.settings.config import SweepConfig

    assert {"trnsim", "trnsim-tf32", "trnsim-next"} <= set(shipped_profiles())
    by_name = load_profile("trnsim-tf32")
    assert by_name.hash == load_profile(str(SHIPPED_PROFILES / "trnsim-tf32.toml")).hash
    assert by_name.float32_math.matmul == "tf32"
    ref = ModelRef(model_id="bert", rank=1)
    for given in ("trnsim-tf32", str(SHIPPED_PROFILES / "trnsim-tf32.toml")):
        repro = repro_command(ref, SweepConfig.of(device="trnsim", device_profile=given))
        assert "--device-profile trnsim-tf32 " in repro, repro
    own = tmp_path / "mine.toml"
    own.write_text((SHIPPED_PROFILES / "trnsim.toml").read_text())
    assert f"--device-profile {own}" in repro_command(ref, SweepConfig.of(device="trnsim", device_profile=str(own)))
