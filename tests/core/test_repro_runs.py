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


def test_refresh_repros_rewrites_an_old_folders_commands_without_its_catalog_path(tmp_path, monkeypatch, capsys) -> None:
    """A folder swept by an earlier version named its catalog by an absolute path; the
    rewrite makes each command as a sweep does now, and changes nothing else."""
    import json

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.chdir(tmp_path)
    catalog = tmp_path / "catalog.csv"
    catalog.write_text("rank,id,downloads,pipeline_tag,library_name,model_type\n"
                       "1,google-bert/bert-base-uncased,93718157,fill-mask,transformers,bert\n")
    out = tmp_path / "sweep"
    with pytest.raises(SystemExit) as swept:
        main(["--catalog", "catalog.csv", "--device", "cpu", "--stages", "load", "--executor", "inline", "--out", str(out), "--no-report"])
    assert swept.value.code == 0
    records = out / "records.jsonl"
    written = json.loads(records.read_text())
    old = dict(written, repro=f"sweep one --device cpu --weights tiny --stages load --catalog {catalog} google-bert/bert-base-uncased")
    records.write_text(json.dumps(old) + "\n")
    capsys.readouterr()
    with pytest.raises(SystemExit) as reported:
        main(["report", str(out), "--refresh-repros"])
    assert reported.value.code == 0
    assert "repro commands rewritten: 1" in capsys.readouterr().err
    fresh = json.loads(records.read_text())
    assert fresh["repro"] == written["repro"] and "--library transformers --model-type bert --task fill-mask" in fresh["repro"]
    assert {k: v for k, v in fresh.items() if k != "repro"} == {k: v for k, v in written.items() if k != "repro"}
    assert (out / "report.md").is_file() and str(catalog) not in (out / "report.md").read_text()
