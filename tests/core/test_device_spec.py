"""The device is resolved once in planning (a ``DeviceSpec``) and rebuilt from it in workers."""

from __future__ import annotations

import pickle
import subprocess
import sys

import pytest

from sweeper.checks.checker import Checker
from sweeper.devices.spec import DeviceSpec, parse, resolve_device
from sweeper.settings.config import SweepConfig
from sweeper.settings.errors import UsageError
from sweeper.sources.zoo import zoo_ref


def test_the_device_string_is_parsed_once_into_name_and_index():
    assert parse("cuda:1") == ("cuda", 1)
    assert parse("trnsim") == ("trnsim", None)
    with pytest.raises(UsageError, match="whole number"):
        parse("cuda:x")


def test_the_spec_carries_the_profile_and_the_settings_workers_need(tmp_path):
    cfg = SweepConfig.of(device="trnsim", collect_all=True, dtype="bfloat16")
    spec, _ = resolve_device(cfg, out_dir=str(tmp_path))
    assert (spec.name, spec.kind, spec.gpus, spec.collect_all, spec.dtype) == ("trnsim", "trnsim", False, True, "bfloat16")
    assert spec.profile_info["hash"] and spec.info()["spec"] == "trnsim"
    assert pickle.loads(pickle.dumps(spec)) == spec


def test_an_unusable_device_is_one_clear_error():
    with pytest.raises(UsageError, match="not usable here"):
        resolve_device(SweepConfig.of(device="cuda:0"))


def test_a_checker_ships_without_its_device_and_sets_it_up_once():
    checker = Checker.for_settings(SweepConfig.of(device="cpu", stages=("load",)))
    first = checker.setup().device
    assert first is not None and checker.setup().device is first
    shipped = pickle.loads(pickle.dumps(checker))
    assert shipped.device is None and shipped.spec == checker.spec
    assert shipped.check(zoo_ref("bert", 1)).status.value == "pass"


def test_gpus_per_model_come_from_the_spec():
    from sweeper.executors.ray import gpus_per_model

    cuda = DeviceSpec(spec="cuda:0", name="cuda", index=0, kind="torch", profile=None, gpus=True)
    assert gpus_per_model(SweepConfig(), cuda) == 1.0
    assert gpus_per_model(SweepConfig(), None) == 0.0
    assert gpus_per_model(SweepConfig.of(num_gpus=0.5), cuda) == 0.5


def test_registries_import_no_implementation():
    code = (
        "import sys, sweeper.devices.base, sweeper.executors.base, sweeper.sources.base, sweeper.settings.config;"
        "mods = ['sweeper.devices.torch_device', 'sweeper.devices.trnsim.device', 'sweeper.executors.inline',"
        " 'sweeper.executors.process', 'sweeper.executors.ray', 'sweeper.sources.zoo', 'sweeper.sources.hub'];"
        "print([m for m in mods if m in sys.modules])"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"
