"""A record's repro command runs as typed, even for a model id that looks like an option."""

from __future__ import annotations

import shlex

import pytest

from sweeper.checks.repro import repro_command
from sweeper.cli import main
from sweeper.records import ModelRef
from sweeper.settings.config import SweepConfig
from sweeper.settings.errors import UsageError


@pytest.mark.parametrize("model_id", ["--device=cuda", "-x", "org/plain"])
def test_repro_reaches_sweep_one_with_the_same_model_and_device(model_id: str, monkeypatch, capsys) -> None:
    cfg = SweepConfig.of(device="cpu", weights="random", dtype="bfloat16")
    argv = shlex.split(repro_command(ModelRef(model_id=model_id, rank=1), cfg))
    assert argv[:2] == ["sweep", "one"]
    seen: dict[str, object] = {}

    def resolve(model: str, cfg: SweepConfig, *, architecture: str | None = None) -> ModelRef:
        seen.update(model=model, device=cfg.device.spec, weights=cfg.materialise.weights, dtype=cfg.device.dtype)
        raise UsageError("stop here")

    import sweeper.sources.resolve

    monkeypatch.setattr(sweeper.sources.resolve, "resolve_model", resolve)
    with pytest.raises(SystemExit) as exit_info:
        main(argv[1:])
    err = capsys.readouterr().err
    assert exit_info.value.code == 2 and "stop here" in err, err
    assert seen == {"model": model_id, "device": "cpu", "weights": "random", "dtype": "bfloat16"}
