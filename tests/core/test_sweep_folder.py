"""The sweep folder names its files, and sweep.json reads as ``SweepMeta`` from any version."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from sweeper.settings.errors import UsageError
from sweeper.storage import folder as names
from sweeper.storage.folder import SweepFolder
from sweeper.storage.sweep_meta import SweepMeta

REPO = Path(__file__).resolve().parents[2]
PUBLISHED = sorted((REPO / "reports").glob("*/sweep.json"))


@pytest.mark.parametrize("path", PUBLISHED, ids=[p.parent.name for p in PUBLISHED])
def test_published_sweep_json_reads_and_writes_back_unchanged(path: Path) -> None:
    raw = json.loads(path.read_text(encoding="utf-8"))
    meta = SweepFolder(path.parent).read_meta()
    assert meta.found and meta.device_spec == "trnsim" and meta.profile["name"].startswith("trnsim")
    assert meta.stages == ["load", "to_device", "forward", "backward", "compile", "generate", "shapes"]
    assert meta.source_name == "catalog" and meta.ended and meta.wall_seconds > 0
    assert meta.to_dict() == raw
    assert list(meta.to_dict()) == list(raw)  # the same order of keys on disk


def test_older_and_hand_edited_sweep_json_read_with_defaults(tmp_path: Path) -> None:
    meta = SweepMeta.from_dict(
        {"device": "trnsim", "config": "odd", "source": ["x"], "wall_seconds": "x", "total": "3", "sweep_id": "s"}
    )
    assert meta.device == {"spec": "trnsim"} and meta.device_spec == "trnsim" and meta.profile is None
    assert meta.config is None and meta.source is None and meta.source_name == ""
    assert meta.wall_seconds is None and meta.total is None and meta.stages is None
    assert meta.setting("weights") is None and not meta.ended and not meta.interrupted
    meta = SweepMeta.from_dict({"device": {"spec": "cpu", "profile": "p"}, "config": {"stages": "load", "weights": "tiny"}})
    assert meta.device == {"spec": "cpu"} and meta.config == {"weights": "tiny"}
    assert not SweepMeta.from_dict([1, 2]).found


def test_a_folder_without_sweep_json_reads_as_missing_and_bad_json_is_one_error(tmp_path: Path) -> None:
    folder = SweepFolder(tmp_path)
    assert not folder.read_meta().found
    folder.meta.write_text("{not json")
    with pytest.raises(UsageError, match="is not valid JSON"):
        folder.read_meta()


def test_settings_are_found_in_a_nested_settings_table() -> None:
    meta = SweepMeta.from_dict({"config": {"device": {"name": "trnsim"}, "output": {"stages": ["load"], "dtype": "bfloat16"}}})
    assert meta.stages == ["load"] and meta.setting("dtype") == "bfloat16" and meta.setting("atol") is None


def test_a_resumed_sweep_keeps_its_id_and_start_and_adds_up_wall_time(tmp_path: Path) -> None:
    folder = SweepFolder(tmp_path)
    sections = {"config": {"stages": ["load"]}, "source": {"name": "zoo"}, "device": {"spec": "cpu", "profile": None}}
    first = SweepMeta.begin(folder.read_meta(), versions={"torch": "x"}, total=3, **sections)
    assert not first.resumed and first.sweep_id and first.started
    folder.write_meta(first.finish(1.5, interrupted=True))
    on_disk = json.loads(folder.meta.read_text())
    assert on_disk["interrupted"] is True and on_disk["wall_seconds"] == 1.5 and on_disk["device"]["profile"] is None
    assert list(on_disk)[-2:] == ["interrupted", "ended"]
    second = SweepMeta.begin(folder.read_meta(), versions={"torch": "x"}, total=3, **sections)
    assert second.resumed and (second.sweep_id, second.started) == (first.sweep_id, first.started)
    assert "ended" not in second.to_dict() and "interrupted" not in second.to_dict()
    done = second.finish(2.0, cache={"path": "c"})
    assert done.wall_seconds == 3.5 and done.cache == {"path": "c"} and not done.interrupted


def test_sweep_json_is_redacted_on_its_way_to_disk(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HF_TOKEN", "hf_abcdefghijklmnopqrstuvwxyz0123")
    folder = SweepFolder(tmp_path)
    folder.write_meta(SweepMeta(sweep_id="s", source={"name": "hub", "why": "token hf_abcdefghijklmnopqrstuvwxyz0123"}))
    assert "hf_abcdefghijklmnopqrstuvwxyz0123" not in folder.meta.read_text()
    assert not list(tmp_path.glob("*.tmp"))


def test_not_a_sweep_folder_is_one_error(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="does not exist"):
        SweepFolder(tmp_path / "absent").require_records()
    with pytest.raises(UsageError, match=f"no {names.RECORDS} in"):
        SweepFolder(tmp_path).require_records()


def test_every_file_a_sweep_and_its_report_write_is_named_by_the_folder(tmp_path: Path) -> None:
    """The files a sweep (inline, a check that passes every model) and its report leave
    are the folder's own names."""
    from sweeper.records import Status, base_record
    from sweeper.runner import run_sweep
    from sweeper.settings.config import SweepConfig

    def passes(ref, cfg):  # noqa: ANN001, ANN202 - the executor's CheckFn
        return base_record(ref, sweep_id="", device=cfg.device.spec, status=Status.PASS)

    cfg = SweepConfig.of(source="zoo", top=2, executor="inline", out=str(tmp_path / "out"), stages=("load",))
    result = run_sweep(cfg, check=passes, quiet=True)
    known = {v for k, v in vars(names).items() if k.isupper() and isinstance(v, str)}
    left = set(os.listdir(result.out_dir))
    assert left <= known, left - known
    assert {names.RECORDS, names.META, names.REPORT, names.SUMMARY, names.PAGE, names.PARQUET} <= left
    assert SweepFolder(result.out_dir).read_meta().total == 2
