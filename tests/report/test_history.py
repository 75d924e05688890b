"""``sweep history``: three real nights of the zoo on trnsim, the middle one with a device
profile that no longer runs an op; history.md's figures recomputed from the records."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from sweeper.devices.trnsim.profile import DEFAULT_PROFILE

SWEEP = [sys.executable, "-m", "sweeper.cli"]
NIGHT = ["--top", "2", "--device", "trnsim", "--source", "zoo", "--stages", "load,to_device,forward,backward",
         "--executor", "inline", "--quiet", "--no-report"]
PLANTED_OP = "aten::gelu"


def planted_profile(folder: Path) -> Path:
    """The default profile, but the chip no longer runs ``PLANTED_OP`` (eager or compiled)."""
    path = folder / "trnsim-no-gelu.toml"
    path.write_text(DEFAULT_PROFILE.read_text() + f'\n[[ops]]\nfamily = "planted"\neager = "error"\ncompile = "error"\n'
                    f'names = ["{PLANTED_OP}"]\n')
    return path


def _sweep(*args: str) -> subprocess.CompletedProcess:
    proc = subprocess.run([*SWEEP, *args], capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr
    return proc


@pytest.fixture(scope="module")
def nights(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """results/night-1 (default profile), night-2 (the planted profile), night-3 (default again)."""
    root = tmp_path_factory.mktemp("history")
    results = root / "results"
    profile = planted_profile(root)
    for name, extra in (("night-1", []), ("night-2", ["--device-profile", str(profile)]), ("night-3", [])):
        _sweep(*NIGHT, *extra, "--out", str(results / name))
    return results


def _records(folder: Path) -> dict[str, dict]:
    return {r["key"]: r for r in map(json.loads, (folder / "records.jsonl").read_text().splitlines())}


def _row(text: str, night: str) -> list[str]:
    line = next(ln for ln in text.splitlines() if ln.startswith(f"| `{night}` |"))
    return [c.strip() for c in line.strip("|").split("|")]


def test_history_figures_agree_with_the_records_and_name_the_night_and_reason(nights: Path, tmp_path: Path) -> None:
    out = tmp_path / "history"
    proc = _sweep("history", str(nights), "--out", str(out))
    assert proc.stdout.strip() == str(out / "history.md")
    text = (out / "history.md").read_text()
    records = {n: _records(nights / n) for n in ("night-1", "night-2", "night-3")}
    common = set.intersection(*(set(r) for r in records.values()))
    assert len(common) == 2
    for night, recs in records.items():
        outcomes = [recs[k]["outcome"] for k in common]
        passing, tried = outcomes.count("pass"), sum(o in ("pass", "device") for o in outcomes)
        row = _row(text, night)
        assert row[6] == str(passing) and row[7] == str(tried)
        assert row[8] == (f"{100 * passing / tried:.1f}%" if tried else "—")
        assert row[9] == f"{100 * passing / len(common):.1f}%"  # zoo: no downloads, shares of models
    # The planted night fails the models that use the op, and the next night fixes them.
    broken = {k for k, r in records["night-2"].items() if r["outcome"] != "pass"}
    assert broken and all(records["night-1"][k]["outcome"] == "pass" for k in broken)
    items = text.split("## Lowering-plan items per night")[1].split("\n## ")[0]
    item = next(ln for ln in items.splitlines() if f"`{PLANTED_OP}`" in ln)
    assert item.endswith(f"| 0 | {len(broken)} | 0 |")  # the planted op's item blocks on its night alone
    night2 = text.split("### night-2 (since night-1)")[1].split("### night-3")[0]
    assert f"regressed {len(broken)} ·" in night2
    for key in broken:
        line = next(ln for ln in night2.splitlines() if records["night-2"][key]["model_id"] in ln)
        assert line.startswith("| regressed |") and f"`{PLANTED_OP}`" in line
        assert "device profile" in line  # why the check ran again: the profile changed
    night3 = text.split("### night-3 (since night-2)")[1].split("\n## ")[0]
    assert f"fixed {len(broken)} ·" in night3
    blocker = next(ln for ln in text.splitlines() if PLANTED_OP.replace("_", "\\_") in ln and ln.startswith("| unsupported"))
    assert "| `night-2` | `night-2` | 1 | 0 | gone after night-2 |" in blocker
    assert re.search(r"!\[trend\]\(history-charts/history_coverage\.png\)", text)
    assert (out / "history-charts" / "history_coverage.png").stat().st_size > 1000
    page = (out / "history.html").read_text()
    assert "night-2" in page and PLANTED_OP in page and "<script" not in page
    figures = json.loads((out / "history.json").read_text())
    assert [n["night"] for n in figures["nights"]] == ["night-1", "night-2", "night-3"]


def test_history_takes_folders_in_the_order_given_and_writes_beside_the_newest(nights: Path) -> None:
    newest = nights / "night-3"
    _sweep("history", str(nights / "night-1"), str(newest))
    text = (newest / "history.md").read_text()
    assert "2 nights, oldest first: `night-1`" in text
    assert "### night-3 (since night-1)" in text
    assert 'href="index.html"' not in (newest / "history.html").read_text()  # no report was written: no link


@pytest.mark.parametrize("args", [["/nonexistent/sweep"], []])
def test_history_of_no_sweep_is_a_one_line_error(args: list[str], tmp_path: Path) -> None:
    proc = subprocess.run([*SWEEP, "history", *args], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2
    assert proc.stderr.startswith("sweep: error:") and "Traceback" not in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1


def test_a_folder_holding_no_sweeps_is_a_usage_error(tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir()
    proc = subprocess.run([*SWEEP, "history", str(tmp_path / "empty")], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2 and "neither a sweep folder nor a folder of sweep folders" in proc.stderr
