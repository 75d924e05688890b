"""One sweep owns its output folder: a lock, non-records set aside, reports all-or-nothing."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from sweeper.cli import main
from sweeper.records import ModelRef, Status, base_record

REPO = Path(__file__).resolve().parents[2]


def _catalog(tmp_path: Path, n: int = 4) -> Path:
    path = tmp_path / "catalog.csv"
    path.write_text("model_id,downloads\n" + "".join(f"org/m{i},{100 - i}\n" for i in range(n)))
    return path


def _sweep(capsys: pytest.CaptureFixture[str], catalog: Path, out: Path, *extra: str) -> tuple[int, str]:
    """The CLI in this process, with a check that needs no torch (``sweeper.checks.checker`` stubbed)."""
    with pytest.raises(SystemExit) as exit_info:
        main(["--catalog", str(catalog), "--executor", "inline", "--out", str(out), "--no-report", *extra])
    captured = capsys.readouterr()
    return int(exit_info.value.code or 0), captured.err


@pytest.fixture(autouse=True)
def _cheap_check(monkeypatch: pytest.MonkeyPatch) -> None:
    import sweeper.runner

    def check(ref: ModelRef, cfg: object) -> object:
        return base_record(ref, sweep_id="", device="cpu", status=Status.PASS)

    monkeypatch.setattr(sweeper.runner, "_checker", lambda cfg, spec: check)
    monkeypatch.setattr(sweeper.runner.run_sweep, "__kwdefaults__", {"check": check, "quiet": False, "write_report": True})


def test_a_second_sweep_on_a_locked_folder_exits_2_naming_the_holder(tmp_path: Path, capsys) -> None:
    out = tmp_path / "out"
    holder = subprocess.Popen(
        [sys.executable, "-c", "import sys, time; from sweeper.storage.lock import own_folder\n"
         "with own_folder(sys.argv[1]):\n    print('held', flush=True); time.sleep(60)", str(out)],
        stdout=subprocess.PIPE, text=True, cwd=REPO, env={**os.environ, "PYTHONPATH": str(REPO)},
    )
    try:
        assert holder.stdout.readline().strip() == "held"
        code, err = _sweep(capsys, _catalog(tmp_path), out)
    finally:
        holder.kill()
        holder.wait()
    assert code == 2 and f"in use by another sweep (pid {holder.pid})" in err, err
    assert not (out / "records.jsonl").exists()
    # The lock dies with its holder: the same command now runs.
    code, err = _sweep(capsys, _catalog(tmp_path), out)
    assert code == 0, err


@pytest.mark.parametrize("junk", [b"{}\n", b"\xff\xfe garbage \x80\n", b"[1, 2]\n", b'{"model_id": "x", "status": "bogus"}\n'])
def test_lines_that_are_not_records_are_set_aside_and_resume_goes_on(tmp_path: Path, capsys, junk: bytes) -> None:
    out, catalog = tmp_path / "out", _catalog(tmp_path)
    code, err = _sweep(capsys, catalog, out, "--top", "2")
    assert code == 0, err
    records = out / "records.jsonl"
    good = records.read_bytes()
    records.write_bytes(good[: good.index(b"\n") + 1] + junk + good[good.index(b"\n") + 1 :])
    code, err = _sweep(capsys, catalog, out)
    assert code == 0, err
    assert "1 line(s)" in err and "records.rejected.jsonl" in err
    assert (out / "records.rejected.jsonl").read_bytes() == junk
    keys = [json.loads(line)["key"] for line in records.read_text().splitlines()]
    assert sorted(keys) == ["org/m0", "org/m1", "org/m2", "org/m3"]


def test_report_in_a_read_only_folder_changes_nothing(tmp_path: Path, capsys) -> None:
    out = tmp_path / "out"
    code, err = _sweep(capsys, _catalog(tmp_path), out, "--top", "2")
    assert code == 0, err
    before = sorted(p.name for p in out.iterdir())
    out.chmod(0o555)
    try:
        if os.access(out, os.W_OK):
            pytest.skip("running as a user who can write into read-only folders")
        with pytest.raises(SystemExit) as exit_info:
            main(["report", str(out)])
        err = capsys.readouterr().err
    finally:
        out.chmod(0o755)
    assert exit_info.value.code == 2 and "cannot write into" in err and err.count("\n") == 1, err
    assert sorted(p.name for p in out.iterdir()) == before  # no report.md alone, no temp files


def test_a_report_that_fails_half_way_leaves_the_previous_one(tmp_path: Path, capsys, monkeypatch) -> None:
    out, catalog = tmp_path / "out", _catalog(tmp_path)
    code, err = _sweep(capsys, catalog, out, "--top", "2")
    assert main_report(out, capsys) == 0
    first = {name: (out / name).read_bytes() for name in ("report.md", "summary.json", "records.parquet")}
    code, err = _sweep(capsys, catalog, out)  # two more models: the next report differs
    assert code == 0, err

    import sweeper.report.export

    def disk_full(*args: object, **kwargs: object) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(sweeper.report.export, "write_parquet", disk_full)
    assert main_report(out, capsys) == 1
    assert {name: (out / name).read_bytes() for name in first} == first  # all old, none half-new
    assert [p.name for p in out.rglob("*") if ".tmp-" in p.name] == []


def main_report(out: Path, capsys) -> int:
    with pytest.raises(SystemExit) as exit_info:
        main(["report", str(out)])
    capsys.readouterr()
    return int(exit_info.value.code or 0)
