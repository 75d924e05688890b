"""The command line as a user meets it: bad input is one line, exit 2, nothing written."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

SWEEP = [sys.executable, "-m", "sweeper.cli"]


def _run(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([*SWEEP, *args], cwd=cwd, capture_output=True, text=True, timeout=120)


@pytest.mark.parametrize(
    "args, fragment",
    [
        (["--top", "3", "--device", "warp9"], "unknown device 'warp9'"),
        (["--top", "0"], "--top must be a positive"),
        (["--top", "3", "--stages", "load,fly"], "unknown stage fly"),
        (["--top", "3", "--weights", "huge"], "unknown weights mode"),
        (["--top", "3", "--catalog", "missing.csv"], "missing.csv"),
        (["--bogus-flag"], "No such option"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(tmp_path, args, fragment):
    out = tmp_path / "out"
    proc = _run(*args, "--out", str(out), cwd=tmp_path)
    assert proc.returncode == 2, proc.stderr
    lines = [ln for ln in proc.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1 and lines[0].startswith("sweep: error:"), proc.stderr
    assert fragment in lines[0]
    assert "Traceback" not in proc.stderr
    assert not out.exists()


def test_malformed_catalog_names_the_problem(tmp_path):
    bad = tmp_path / "bad.csv"
    bad.write_text("name,downloads\nfoo,1\n")
    proc = _run("--catalog", str(bad), "--out", str(tmp_path / "o"), cwd=tmp_path)
    assert proc.returncode == 2
    assert "id" in proc.stderr and len(proc.stderr.strip().splitlines()) == 1
    assert not (tmp_path / "o").exists()


def test_devices_lists_cpu_and_trnsim(tmp_path):
    proc = _run("devices", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    names = {line.split()[0] for line in proc.stdout.splitlines()[1:]}
    assert {"cpu", "cuda", "trnsim"} <= names
    assert any(line.startswith("cpu") and " yes " in line for line in proc.stdout.splitlines())


def test_an_unexpected_error_is_one_line_with_the_traceback_on_request(tmp_path):
    # An output folder under a regular file cannot be made: an OS error, not a traceback.
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    args = ["--top", "1", "--source", "zoo", "--device", "cpu", "--executor", "inline", "--out", str(blocker / "out")]
    proc = _run(*args, cwd=tmp_path)
    assert proc.returncode == 1
    lines = proc.stderr.strip().splitlines()
    assert lines[-1].startswith("sweep: error: NotADirectoryError: ") and "SWEEPER_DEBUG=1" in lines[-1]
    assert "Traceback" not in proc.stderr
    debug = subprocess.run([*SWEEP, *args], cwd=tmp_path, capture_output=True, text=True, timeout=120,
                           env={**os.environ, "SWEEPER_DEBUG": "1"})
    assert debug.returncode == 1 and "Traceback" in debug.stderr


def test_help_piped_into_a_closed_reader_exits_without_a_traceback(tmp_path):
    proc = subprocess.run(f"{sys.executable} -m sweeper.cli --help | head -1", shell=True, cwd=tmp_path,
                          capture_output=True, text=True, timeout=120)
    assert "Traceback" not in proc.stderr


def test_a_device_flag_not_given_leaves_the_config_files_device(tmp_path):
    # The file's device is the one used: an unknown one is refused before anything runs
    # (a --device default must not silently replace it with the CPU).
    settings = tmp_path / "sweep.toml"
    settings.write_text('device = "warp9"\n')
    out = tmp_path / "out"
    proc = _run("--config", str(settings), "--source", "zoo", "--top", "1", "--stages", "load",
                "--executor", "inline", "--no-report", "--out", str(out), cwd=tmp_path)  # fmt: skip
    assert proc.returncode == 2, proc.stderr
    assert "unknown device 'warp9'" in proc.stderr
    assert not out.exists()
