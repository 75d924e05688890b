"""Config precedence and validation."""

from __future__ import annotations

import pytest

from sweeper.config import build_config
from sweeper.errors import UsageError


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
        ({"executor": "slurm"}, "executor"),
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
