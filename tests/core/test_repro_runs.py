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


def test_a_catalog_models_repro_names_no_file_and_reruns_the_same_check(tmp_path, monkeypatch, capsys) -> None:
    """A published record's repro runs on another machine: the catalog entry travels as flags."""
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    catalog = tmp_path / "somewhere" / "catalog.csv"
    catalog.parent.mkdir()
    catalog.write_text("rank,id,downloads,pipeline_tag,library_name,model_type\n"
                       "7,google-bert/bert-base-uncased,93718157,fill-mask,transformers,bert\n")

    def run(argv: list[str]) -> dict:
        with pytest.raises(SystemExit) as exit_info:
            main(argv)
        assert exit_info.value.code == 0
        import json

        return json.loads(capsys.readouterr().out)

    first = run(["one", "--device", "cpu", "--stages", "load,forward", "--catalog", str(catalog), "--json",
                 "google-bert/bert-base-uncased"])
    repro = first["repro"]
    assert str(tmp_path) not in repro and "--catalog" not in repro, repro
    assert "--library transformers --model-type bert --task fill-mask" in repro, repro
    again = run([*shlex.split(repro)[1:], "--json"])
    assert again["repro"] == repro  # the same command, whichever way the model was named
    assert again["status"] == first["status"] == "pass"
    for field in ("model_id", "library_name", "model_type", "pipeline_tag", "architecture", "num_parameters", "notes"):
        assert again[field] == first[field], field
    assert {s: r["status"] for s, r in again["stages"].items()} == {s: r["status"] for s, r in first["stages"].items()}
