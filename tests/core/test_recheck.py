"""``--recheck P`` with ``--cache``: cached checks run again, and a verdict that does not
come back under the same fingerprint is named flaky (in the record, sweep.json and history)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from sweeper.storage.recheck import chosen

SWEEP = [sys.executable, "-m", "sweeper.cli"]
NIGHT = ["--top", "2", "--device", "trnsim", "--source", "zoo", "--stages", "load,to_device,forward",
         "--executor", "inline", "--quiet", "--no-report"]


def _run(*args: str) -> subprocess.CompletedProcess:
    proc = subprocess.run([*SWEEP, *args], capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr
    return proc


def _plant_flip(cache: Path) -> str:
    """Turn one cached passing verdict into a failure, as a flaky check would have left it;
    returns the model it belongs to."""
    entry = sorted(cache.rglob("*.json"))[0]
    record = json.loads(entry.read_text())
    assert record["status"] == "pass"
    blocker = {"kind": "unsupported_op", "op": "aten::planted", "message": "planted", "stage": "forward", "origin": "device"}
    record.update(status="fail", outcome="device", reason=blocker, blockers=[blocker])
    entry.write_text(json.dumps(record))
    return record["model_id"]


def _records(folder: Path) -> dict[str, dict]:
    return {r["model_id"]: r for r in map(json.loads, (folder / "records.jsonl").read_text().splitlines())}


def test_a_planted_flip_under_recheck_100_is_named_flaky(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    _run(*NIGHT, "--cache", str(cache), "--out", str(tmp_path / "n1"))
    flipped = _plant_flip(cache)
    _run(*NIGHT, "--cache", str(cache), "--recheck", "100", "--out", str(tmp_path / "n2"))
    records = _records(tmp_path / "n2")
    assert records[flipped]["notes"]["recheck"] == {
        "reproduced": False, "cached": "device: unsupported_op aten::planted", "now": "pass",
        "cached_from_sweep": json.loads((tmp_path / "n1" / "sweep.json").read_text())["sweep_id"]}
    steady = next(r for m, r in records.items() if m != flipped)
    assert steady["notes"]["recheck"]["reproduced"] is True and steady["status"] == "pass"
    cached = json.loads((tmp_path / "n2" / "sweep.json").read_text())["cache"]
    assert (cached["recheck"], cached["rechecked"], cached["not_reproduced"]) == (100.0, 2, 1)

    _run("history", str(tmp_path / "n1"), str(tmp_path / "n2"), "--out", str(tmp_path / "h"))
    flaky = (tmp_path / "h" / "history.md").read_text().split("## Flaky verdicts")[1]
    assert "| `n2` | 2 | 1 | 50.0% |" in flaky
    assert f"Flaky: {flipped}." in flaky
    assert json.loads((tmp_path / "h" / "history.json").read_text())["rechecks"][1] == {
        "night": "n2", "rechecked": 2, "flaky": 1, "rate": 0.5}


def test_without_recheck_the_cache_answers_and_history_names_the_same_check_flip(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    _run(*NIGHT, "--cache", str(cache), "--out", str(tmp_path / "n1"))
    flipped = _plant_flip(cache)
    _run(*NIGHT, "--cache", str(cache), "--out", str(tmp_path / "n2"))
    assert _records(tmp_path / "n2")[flipped]["status"] == "fail"  # reused as it was cached
    _run("history", str(tmp_path / "n1"), str(tmp_path / "n2"), "--out", str(tmp_path / "h"))
    flaky = (tmp_path / "h" / "history.md").read_text().split("## Flaky verdicts")[1]
    assert f"| `n2` | {flipped} | pass | device |" in flaky


def test_the_share_rechecked_is_seeded_and_about_p_percent() -> None:
    fps = [f"{i:032x}" for i in range(2000)]
    picked = [fp for fp in fps if chosen(fp, percent=10, seed=0, day="2026-12-01")]
    assert 150 < len(picked) < 250
    assert picked == [fp for fp in fps if chosen(fp, percent=10, seed=0, day="2026-12-01")]  # a resumed night
    assert picked != [fp for fp in fps if chosen(fp, percent=10, seed=0, day="2026-12-02")]  # another night
    assert all(chosen(fp, percent=100, seed=0) for fp in fps[:50]) and not any(chosen(fp, percent=0, seed=0) for fp in fps[:50])


@pytest.mark.parametrize(("args", "words"), [(["--recheck", "10"], "it needs --cache DIR"),
                                             (["--recheck", "101", "--cache", "C"], "--recheck must be at most 100")])
def test_bad_recheck_is_a_one_line_error(args: list[str], words: str, tmp_path: Path) -> None:
    args = [str(tmp_path / "c") if a == "C" else a for a in args]
    proc = subprocess.run([*SWEEP, *NIGHT, *args, "--out", str(tmp_path / "n")], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2 and proc.stderr.startswith("sweep: error:") and words in proc.stderr, proc.stderr
    assert not (tmp_path / "n").exists()
