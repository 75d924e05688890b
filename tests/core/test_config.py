"""Config precedence and validation."""

from __future__ import annotations

from pathlib import Path

import pytest

from sweeper.settings.config import DEFAULT_SETTINGS, build_config
from sweeper.settings.errors import UsageError


def test_cli_overrides_file_overrides_defaults(tmp_path):
    cfg_file = tmp_path / "s.toml"
    cfg_file.write_text('timeout = 12.0\nstages = "load,forward"\ntop = 5\n')
    cfg = build_config({"top": 7}, config_file=str(cfg_file))
    assert cfg.source.top == 7 and cfg.execution.timeout == 12.0 and cfg.check.stages == ("load", "forward")


@pytest.mark.parametrize(
    "overrides, fragment",
    [
        ({"top": 0}, "--top"),
        ({"stages": "load,fly"}, "unknown stage fly"),
        ({"weights": "huge"}, "weights mode"),
        ({"executor": "nowhere"}, "executor"),
        ({"source": "catalog"}, "--catalog"),
    ],
)
def test_bad_values_are_one_clear_line(overrides, fragment):
    with pytest.raises(UsageError) as info:
        build_config(overrides)
    assert fragment in str(info.value) and "\n" not in str(info.value)


def test_unknown_setting_in_file(tmp_path):
    bad = tmp_path / "bad.toml"
    bad.write_text("colour = 'red'\n")
    with pytest.raises(UsageError, match="colour"):
        build_config({}, config_file=str(bad))


def test_settings_are_sections_reached_by_flat_names(tmp_path):
    cfg_file = tmp_path / "s.toml"
    cfg_file.write_text('device = "trnsim"\nhub_limit = 50\n[execution]\nworkers = 3\n')
    cfg = build_config({"top": 4}, config_file=str(cfg_file))
    assert cfg.device.spec == "trnsim" and cfg.execution.workers == 3
    assert cfg.source.top == 4 and cfg.source.hub_limit == 50
    assert cfg.to_dict()["workers"] == 3 and cfg.replace(workers=5).execution.workers == 5


def test_a_setting_in_the_wrong_section_is_named(tmp_path):
    bad = tmp_path / "bad.toml"
    bad.write_text("[execution]\ntop = 3\n")
    with pytest.raises(UsageError, match=r"\[execution\] has no setting 'top'"):
        build_config({}, config_file=str(bad))


def test_every_shipped_config_file_still_loads():
    build_config({}, config_file=str(DEFAULT_SETTINGS))
    repo_configs = Path(__file__).resolve().parents[2] / "configs"
    for path in sorted(repo_configs.glob("*.toml")):
        build_config({}, config_file=str(path))


def test_the_repos_configs_are_the_packages_files():
    """configs/ is where users look; the package is what a wheel carries: one set of files."""
    from sweeper.devices.trnsim.profile import SHIPPED_PROFILES

    repo_configs = Path(__file__).resolve().parents[2] / "configs"
    assert (repo_configs / "default.toml").resolve() == Path(str(DEFAULT_SETTINGS)).resolve()
    assert (repo_configs / "devices").resolve() == Path(str(SHIPPED_PROFILES)).resolve()


def test_a_plugin_source_and_executor_are_accepted(monkeypatch):
    from sweeper.executors import registry as executors
    from sweeper.sources import registry as sources

    monkeypatch.setitem(sources._REGISTRY, "mine", "somewhere:factory")
    monkeypatch.setitem(executors._REGISTRY, "slurm", "somewhere:Executor")
    cfg = build_config({"source": "mine", "executor": "slurm"})
    assert (cfg.source.name, cfg.execution.executor) == ("mine", "slurm")
