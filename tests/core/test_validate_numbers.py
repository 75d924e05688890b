"""Every number and settings file is checked up front: one line, exit 2, nothing written."""

from __future__ import annotations

import gzip
from pathlib import Path

import pytest

from sweeper.cli import main

BASE = ["--source", "zoo", "--executor", "inline", "--stages", "load"]


@pytest.mark.parametrize(
    "args, fragment",
    [
        (["--num-cpus", "0"], "--num-cpus must be more than 0"),
        (["--num-cpus", "0.0001"], "--num-cpus must be at least 0.01"),
        (["--num-cpus", "nan"], "--num-cpus must be a finite number"),
        (["--timeout", "nan"], "--timeout must be a finite number"),
        (["--timeout", "inf"], "--timeout must be a finite number"),
        (["--timeout", "-1"], "--timeout must be more than 0"),
        (["--memory-limit-mb", "-5"], "--memory-limit-mb must be a positive whole number"),
        (["--memory-limit-mb", "0"], "--memory-limit-mb must be a positive whole number"),
        (["--top", "99999999999999999999"], "--top must be a positive whole number (a number of models, at most 100,000,000), got"),
        (["--workers", "0"], "--workers must be a positive whole number"),
        (["--retries", "-1"], "--retries must be a whole number from 0"),
        (["--max-in-flight", "0"], "--max-in-flight must be a positive whole number"),
        (["--num-gpus", "-1"], "--num-gpus must be 0 or more"),
        (["--worker-max-models", "0"], "--worker-max-models must be a positive whole number"),
        (["--hub-rpm", "nan"], "--hub-rpm must be a finite number"),
        (["--hub-rpm", "inf"], "--hub-rpm must be a finite number"),
        (["--hub-rpm", "-3"], "--hub-rpm must be more than 0"),
        (["--hub-tries", "-1"], "--hub-tries must be a positive whole number"),
        (["--hub-tries", "1000"], "--hub-tries must be a positive whole number (tries per Hub request, at most 100)"),
        (["--max-params", "-5"], "--max-params must be a positive whole number"),
        (["--max-params", "0"], "--max-params must be a positive whole number"),
        (["--max-download-gb", "nan"], "--max-download-gb must be a finite number"),
        (["--max-download-gb", "-1"], "--max-download-gb must be more than 0"),
    ],
)
def test_bad_numbers_are_one_line_exit_2(tmp_path: Path, capsys, args: list[str], fragment: str) -> None:
    out = tmp_path / "out"
    with pytest.raises(SystemExit) as exit_info:
        main([*BASE, "--top", "1", *args, "--out", str(out)] if "--top" not in args else [*BASE, *args, "--out", str(out)])
    err = capsys.readouterr().err
    assert exit_info.value.code == 2, err
    assert err.count("\n") == 1 and err.startswith("sweep: error: ") and fragment in err, err
    assert not out.exists()


@pytest.mark.parametrize(
    "setting, fragment",
    [
        ("hub_rpm = nan", "--hub-rpm must be a finite number (Hub requests per minute), got nan"),
        ("hub_rpm = -inf", "--hub-rpm must be a finite number"),
        ("hub_tries = -2", "--hub-tries must be a positive whole number"),
        ("max_params = -1", "--max-params must be a positive whole number"),
        ("max_download_gb = nan", "--max-download-gb must be a finite number (gigabytes), got nan"),
        ("max_download_gb = -0.5", "--max-download-gb must be more than 0"),
    ],
)
def test_bad_numbers_in_a_settings_file_are_one_line_exit_2(tmp_path: Path, capsys, setting: str, fragment: str) -> None:
    toml = tmp_path / "bad.toml"
    toml.write_text(f"{setting}\n")
    out = tmp_path / "out"
    with pytest.raises(SystemExit) as exit_info:
        main([*BASE, "--top", "1", "--config", str(toml), "--out", str(out)])
    err = capsys.readouterr().err
    assert exit_info.value.code == 2, err
    assert err.count("\n") == 1 and err.startswith("sweep: error: ") and fragment in err, err
    assert not out.exists()


def test_unset_auto_numbers_still_run(tmp_path: Path) -> None:
    """max_params and max_download_gb left unset mean "what this node holds": not an error."""
    toml = tmp_path / "ok.toml"
    toml.write_text("hub_rpm = 120.5\nhub_tries = 1\n")
    out = tmp_path / "out"
    with pytest.raises(SystemExit) as exit_info:
        main([*BASE, "--top", "1", "--config", str(toml), "--out", str(out), "--no-report"])
    assert exit_info.value.code in (0, None)
    assert (out / "records.jsonl").read_text().count("\n") == 1


def _bad_files(tmp_path: Path) -> dict[str, tuple[list[str], str]]:
    toml = tmp_path / "bad.toml"
    toml.write_text('# settings\ndevice = "cpu"\ntop = "abc"\n')
    big = tmp_path / "big.csv"
    big.write_text("model_id,downloads\norg/a,1\norg/b," + "9" * (129 * 1024) + "\n")
    truncated = tmp_path / "cut.csv.gz"
    truncated.write_bytes(gzip.compress(("model_id,downloads\n" + "".join(f"org/m{i},{i}\n" for i in range(5000))).encode())[:4000])
    return {
        "toml type": (["--config", str(toml)], f"config file {toml} line 3: top = 'abc' is not a whole number"),
        "csv field": (["--catalog", str(big)], f"catalog {big} line 3: field larger than field limit"),
        "gzip cut": (["--catalog", str(truncated)], f"catalog {truncated} cannot be read after line"),
    }


@pytest.mark.parametrize("case", ["toml type", "csv field", "gzip cut"])
def test_bad_files_name_the_file_and_line(tmp_path: Path, capsys, case: str) -> None:
    args, fragment = _bad_files(tmp_path)[case]
    out = tmp_path / "out"
    with pytest.raises(SystemExit) as exit_info:
        main(["--executor", "inline", *args, "--out", str(out)])
    err = capsys.readouterr().err
    assert exit_info.value.code == 2, err
    assert err.count("\n") == 1 and fragment in err, err
    assert not out.exists()
