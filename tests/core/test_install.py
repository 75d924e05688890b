"""sweeper as a device's user installs it: a wheel, outside the source tree, into an
environment that already holds its torch, without Ray; and what it publishes travels.

The environment is a fresh venv whose dependencies are the test's own (a ``.pth`` line
names their folder, as a vendor's image would hold them); the wheel goes into the venv's
own site-packages, so ``import sweeper`` finds the installed package, never this checkout,
and every file it reads comes from the wheel. Ray is blocked there: a device's environment
need not have it.
"""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import subprocess
import sys
import sysconfig
import tempfile
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
RUN_TIMEOUT_S = 600


def _run(argv: list[str], *, cwd: Path, env: dict[str, str] | None = None, timeout: float = RUN_TIMEOUT_S) -> subprocess.CompletedProcess:
    done = subprocess.run([str(a) for a in argv], cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)
    assert done.returncode == 0, f"{' '.join(map(str, argv))}\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    return done


@pytest.fixture(scope="module")
def installed(tmp_path_factory) -> dict[str, Path]:
    work = tmp_path_factory.mktemp("install")
    # Build from a copy of what the package is made of: a build folder left in the checkout
    # could add files the source no longer has.
    source = work / "source"
    source.mkdir()
    shutil.copytree(ROOT / "sweeper", source / "sweeper", ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    for name in ("pyproject.toml", "README.md", "LICENSE"):
        if (ROOT / name).is_file():
            shutil.copy2(ROOT / name, source / name)
    wheels = work / "wheels"
    # This environment's setuptools builds it when it has one (no download); else pip's own.
    isolation = ["--no-build-isolation"] if _has_setuptools(77) else []
    _run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", *isolation, "-w", wheels, source], cwd=work)
    wheel = next(wheels.glob("sweeper-*.whl"))

    venv = work / "venv"
    _run([sys.executable, "-m", "venv", "--without-pip", venv], cwd=work)
    python = venv / "bin" / "python"
    site = Path(_run([python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"], cwd=work).stdout.strip())
    # The environment's packages (torch, transformers, ...), after the venv's own.
    (site / "zz_environment.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    (site / "zz_no_ray.pth").write_text("import sys; sys.modules['ray'] = None\n")
    _run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--target", site, wheel], cwd=work)
    run_dir = work / "elsewhere"
    run_dir.mkdir()
    return {"work": work, "wheel": wheel, "python": python, "site": site, "run_dir": run_dir}


def _has_setuptools(major: int) -> bool:
    """Whether this environment's setuptools is at least ``major`` (the build's requirement)."""
    try:
        from importlib.metadata import version

        return int(version("setuptools").split(".")[0]) >= major
    except Exception:  # noqa: BLE001 - absent, or an unreadable version
        return False


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    env.update(HF_HUB_OFFLINE="1", RAY_USAGE_STATS_ENABLED="0")
    return env


def test_the_wheel_carries_its_settings_and_profiles(installed):
    names = set(zipfile.ZipFile(installed["wheel"]).namelist())
    assert "sweeper/settings/default.toml" in names
    assert {"sweeper/devices/trnsim/profiles/trnsim.toml", "sweeper/devices/trnsim/profiles/trnsim-tf32.toml"} <= names
    assert {"sweeper/report/page_assets/page.js", "sweeper/report/page_assets/page.css"} <= names
    where = _run([installed["python"], "-c", "import sweeper, sys; print(sweeper.__file__); print('ray' in sys.modules and sys.modules['ray'])"],
                 cwd=installed["run_dir"], env=_env()).stdout.split()
    assert where[0].startswith(str(installed["site"])) and where[1] == "None", where


def test_installing_into_an_environment_with_torch_keeps_its_torch(installed):
    """Every requirement of the wheel and its extras is met by what the environment holds:
    pip, asked with no index at all, has nothing to add (torch least of all)."""
    from importlib.metadata import version

    report = installed["work"] / "pip-report.json"
    # The README's command: the wheel with the extras this environment has, and its torch
    # named by its distribution's version (torch.__version__ may carry a build label, +cu128,
    # that the installed distribution's version lacks).
    present = {"libraries": "timm", "ray": "ray", "lowering": "torch_mlir", "quantization": "bitsandbytes"}
    extras = ",".join(extra for extra, module in present.items() if importlib.util.find_spec(module) is not None)
    _run([sys.executable, "-m", "pip", "--python", installed["python"], "install", "--dry-run", "--no-index", "-q",
          "--report", report, f"{installed['wheel']}[{extras}]", f"torch=={version('torch')}"],
         # The machine's pip configuration may cap releases (a constraint file): the question
         # is whether the wheel's own requirements are met by what the environment holds.
         cwd=installed["work"], env={**os.environ, "PIP_CONSTRAINT": os.devnull})
    wanted = {item["metadata"]["name"].lower() for item in json.loads(report.read_text())["install"]}
    assert wanted <= {"sweeper"}, wanted


@pytest.mark.parametrize("device", ["trnsim", "cpu"])
def test_a_sweep_from_the_wheel_runs_without_ray_and_publishes_a_folder_that_travels(installed, device):
    out = installed["work"] / f"sweep-{device}"
    catalog = installed["work"] / "catalogs" / f"top-{device}.csv"  # named by its absolute path
    catalog.parent.mkdir(exist_ok=True)
    catalog.write_text("rank,id,downloads,pipeline_tag,library_name,model_type\n"
                       "1,google-bert/bert-base-uncased,93718157,fill-mask,transformers,bert\n"
                       "2,google/vit-base-patch16-224,3000000,image-classification,transformers,vit\n")
    # On the CPU with aot_eager: every stage runs as the default sweep's do, without inductor's
    # C++ builds (a minute and a half of this test, none of it the wheel's).
    backend = ["--compile-backend", "aot_eager"] if device == "cpu" else []
    done = _run([installed["python"], "-m", "sweeper", "--catalog", catalog, "--device", device, "--out", out, *backend],
                cwd=installed["run_dir"], env=_env())
    assert "Ray is not installed in this environment; sweeping with --executor process" in done.stderr
    records = [json.loads(line) for line in (out / "records.jsonl").read_text().splitlines()]
    assert len(records) == 2 and all(r["device"] == device for r in records)
    assert all(r["stages"] for r in records) and not any(r["reason"] and r["reason"]["kind"] == "harness" for r in records)
    assert json.loads((out / "sweep.json").read_text())["config"]["executor"] == "process"
    assert (out / "report.md").is_file() and (out / "index.html").is_file()

    published = installed["work"] / f"published-{device}"
    _run([installed["python"], "-m", "sweeper", "publish", out, "--to", published], cwd=installed["run_dir"], env=_env())
    machine = {str(ROOT), str(installed["work"]), os.path.expanduser("~") + "/", tempfile.gettempdir() + "/",
               str(installed["site"]), sys.prefix}
    for folder in (out, published):
        for path in folder.rglob("*"):
            if path.is_file() and not path.name.startswith("."):
                data = path.read_bytes()
                found = sorted(place for place in machine if place.encode() in data)
                assert not found, f"{path.relative_to(folder)} names {found}"


def test_without_ray_joining_a_cluster_says_what_to_install_and_a_local_sweep_falls_back(monkeypatch):
    import sweeper.executors.base as base
    from sweeper.settings.config import SweepConfig
    from sweeper.settings.errors import UsageError

    monkeypatch.setattr(base, "ray_installed", lambda: False)
    monkeypatch.delenv("RAY_ADDRESS", raising=False)
    said: list[str] = []
    with pytest.raises(UsageError, match=r"pip install 'sweeper\[ray\]', or sweep on this machine with --executor process"):
        base.settle_executor(SweepConfig.of(executor="ray", address="10.0.0.1:6379"), said.append)
    local = base.settle_executor(SweepConfig.of(executor="ray"), said.append)
    assert local.execution.executor == "process" and "sweeping with --executor process" in said[-1]
    assert base.settle_executor(SweepConfig.of(executor="inline"), said.append).execution.executor == "inline"


def test_trnsim_beside_a_torch_it_is_not_tested_with_stops_with_one_line(tmp_path):
    """A vendor's torch is not the one trnsim is tested on: the sweep says so in one line
    and exits 2, and cpu still sweeps in the same environment."""
    script = ("import sys, torch; torch.__version__ = '2.15.0'\n"
              "from sweeper.cli import main\n"
              "main(sys.argv[1:])\n")
    args = ["--source", "zoo", "--top", "1", "--stages", "load", "--executor", "inline", "--no-report"]
    refused = subprocess.run([sys.executable, "-c", script, *args, "--device", "trnsim", "--out", str(tmp_path / "t")],
                             cwd=tmp_path, env=_env(), capture_output=True, text=True, timeout=RUN_TIMEOUT_S)
    assert refused.returncode == 2 and "Traceback" not in refused.stderr, refused.stderr
    line = refused.stderr.strip().splitlines()[-1]
    assert "trnsim runs on torch 2.13" in line and "this is torch 2.15.0" in line and "SWEEPER_TRNSIM_ANY_TORCH=1" in line
    swept = subprocess.run([sys.executable, "-c", script, *args, "--device", "cpu", "--out", str(tmp_path / "c")],
                           cwd=tmp_path, env=_env(), capture_output=True, text=True, timeout=RUN_TIMEOUT_S)
    assert swept.returncode == 0, swept.stderr
