"""configs/cluster: the manifests are valid YAML of the right shape, their sweep commands
parse with the real CLI, and the nightly script sweeps, diffs and links as documented."""

from __future__ import annotations

import csv
import gzip
import json
import os
import re
import shlex
import subprocess
from pathlib import Path

import jsonschema
import pytest
import typer.main
import yaml

from sweeper.cli import app

CLUSTER = Path(__file__).resolve().parents[2] / "configs" / "cluster"
# The openAPIV3Schema (v1) of KubeRay v1.7.0's CRDs, from ray-operator/config/crd/bases/
# ray.io_rayjobs.yaml and ray.io_raycronjobs.yaml, as compact JSON.
KUBERAY = Path(__file__).resolve().parent / "kuberay"
DEFAULT_RAY = next(line.split("==")[1].strip() for line in (Path(__file__).resolve().parents[1] / "versions" / "default.txt").read_text().splitlines()
                   if line.startswith("ray=="))
CRON_FIELD = re.compile(r"^(\*|\d+(-\d+)?)(/\d+)?(,(\*|\d+(-\d+)?)(/\d+)?)*$")


def _load(name: str) -> dict:
    docs = list(yaml.safe_load_all((CLUSTER / name).read_text()))
    assert len(docs) == 1
    return docs[0]


def _parses(command: str) -> dict:
    """The sweep flags of ``command`` parsed by the CLI itself (unknown flags raise)."""
    args = shlex.split(command)
    assert args[0] == "sweep"
    return typer.main.get_command(app).make_context("sweep", args[1:]).params


def _check_cluster_spec(spec: dict) -> None:
    # The image's Ray must match the driver's: the Ray that `make install` pins.
    assert spec["rayVersion"] == DEFAULT_RAY
    assert spec["enableInTreeAutoscaling"] is True  # else min/maxReplicas never scale anything
    head = spec["headGroupSpec"]["template"]["spec"]
    mounts = {m["name"]: m["mountPath"] for m in head["containers"][0]["volumeMounts"]}
    claims = {v["name"]: v["persistentVolumeClaim"]["claimName"] for v in head["volumes"]}
    assert mounts["results"] == "/results" and claims["results"]
    for group in spec["workerGroupSpecs"]:
        assert group["minReplicas"] <= group["replicas"] <= group["maxReplicas"]
        assert group["template"]["spec"]["containers"][0]["image"] == head["containers"][0]["image"]


def _crd_schema(kind: str) -> dict:
    return json.loads(gzip.decompress((KUBERAY / f"{kind}.schema.json.gz").read_bytes()))


def _unknown_fields(doc: object, schema: dict, path: str = "") -> list[str]:
    """Fields the CRD does not define (kubectl's strict field validation rejects them,
    and the API server would otherwise drop them silently)."""
    if schema.get("x-kubernetes-preserve-unknown-fields"):
        return []
    if isinstance(doc, list) and "items" in schema:
        return [f for i, item in enumerate(doc) for f in _unknown_fields(item, schema["items"], f"{path}[{i}]")]
    if not isinstance(doc, dict):
        return []
    props, extra, found = schema.get("properties"), schema.get("additionalProperties"), []
    for key, value in doc.items():
        if props is not None and key in props:
            found += _unknown_fields(value, props[key], f"{path}.{key}")
        elif isinstance(extra, dict):
            found += _unknown_fields(value, extra, f"{path}.{key}")
        elif props is not None:
            found.append(f"{path}.{key}")
    return found


def _crd_problems(doc: dict, kind: str) -> list[str]:
    schema = _crd_schema(kind)
    errors = [f"{'/'.join(map(str, e.absolute_path))}: {e.message}" for e in jsonschema.Draft4Validator(schema).iter_errors(doc)]
    return errors + [f"{f}: not in the {kind} CRD" for f in _unknown_fields(doc, schema)]


@pytest.mark.parametrize("kind", ["rayjob", "raycronjob"])
def test_manifests_turn_on_token_auth_and_validate_against_the_kuberay_crds(kind: str) -> None:
    doc = _load(f"{kind}.yaml")
    assert _crd_problems(doc, kind) == []
    spec = doc["spec"] if kind == "rayjob" else doc["spec"]["jobTemplate"]
    assert spec["rayClusterSpec"]["authOptions"] == {"mode": "token"}
    # The token comes from the Secret KubeRay makes: never set in the manifest itself.
    names = set(yaml.safe_load(spec["runtimeEnvYAML"])["env_vars"])
    groups = [spec["rayClusterSpec"]["headGroupSpec"], *spec["rayClusterSpec"]["workerGroupSpecs"]]
    names |= {e["name"] for g in groups for c in g["template"]["spec"]["containers"] for e in c.get("env", [])}
    assert not {n for n in names if n.startswith("RAY_AUTH")}, names


def test_crd_check_catches_a_bad_auth_mode_and_a_misplaced_field() -> None:
    doc = _load("rayjob.yaml")
    doc["spec"]["rayClusterSpec"]["authOptions"]["mode"] = "tokens"
    doc["spec"]["authOptions"] = {"mode": "token"}  # on the RayJob instead of its cluster
    problems = _crd_problems(doc, "rayjob")
    assert any("'tokens' is not one of" in p for p in problems), problems
    assert ".spec.authOptions: not in the rayjob CRD" in problems, problems


def test_rayjob_manifest():
    job = _load("rayjob.yaml")
    assert (job["apiVersion"], job["kind"]) == ("ray.io/v1", "RayJob")
    params = _parses(job["spec"]["entrypoint"])
    assert params["address"] == "auto" and params["executor"] == "ray"
    assert params["out"].startswith("/results/")
    assert job["spec"]["shutdownAfterJobFinishes"] is True
    _check_cluster_spec(job["spec"]["rayClusterSpec"])


def test_raycronjob_manifest():
    cron = _load("raycronjob.yaml")
    assert (cron["apiVersion"], cron["kind"]) == ("ray.io/v1", "RayCronJob")
    fields = cron["spec"]["schedule"].split()
    assert len(fields) == 5 and all(CRON_FIELD.match(f) for f in fields)
    template = cron["spec"]["jobTemplate"]
    assert template["entrypoint"] == "bash /app/configs/cluster/nightly.sh"
    env = yaml.safe_load(template["runtimeEnvYAML"])["env_vars"]
    assert env["SWEEP_RESULTS"] == "/results" and env["SWEEP_TOP"] == "1000" and env["SWEEP_DEVICE"] == "trnsim"
    _check_cluster_spec(template["rayClusterSpec"])


def _submitted(tmp_path: Path, **settings: str) -> list[str]:
    """The arguments job-submit.sh gives ``ray`` (a stub on PATH that logs them, NUL-separated)."""
    bin_dir = tmp_path / "ray-bin"
    bin_dir.mkdir(exist_ok=True)
    stub = bin_dir / "ray"
    stub.write_text('#!/usr/bin/env bash\nprintf "%s\\0" "$@" > "$RAY_LOG"\nprintf "%s" "${RAY_AUTH_MODE-unset}" > "$RAY_LOG.mode"\n')
    stub.chmod(0o755)
    log = tmp_path / "ray.log"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SWEEP_", "RAY_"))}
    env.update(PATH=f"{bin_dir}:{os.environ['PATH']}", RAY_LOG=str(log), **settings)
    subprocess.run(["bash", str(CLUSTER / "job-submit.sh")], check=True, env=env, capture_output=True)
    return log.read_text().split("\0")[:-1]


def _options(args: list[str]) -> dict[str, str]:
    return {args[i]: args[i + 1] for i in range(len(args) - 1) if args[i].startswith("--")}


def test_job_submit_script_defaults_to_the_documented_job(tmp_path):
    args = _submitted(tmp_path)
    split = args.index("--")
    submit, command = args[:split], args[split + 1:]
    assert submit[:2] == ["job", "submit"]
    options = _options(submit)
    assert options["--address"] == "http://127.0.0.1:8265" and options["--working-dir"] == "."
    assert options["--submission-id"].startswith("sweep-trnsim-")
    assert "pip" not in json.loads(options["--runtime-env-json"])  # the nodes' environment runs it
    params = _parses(shlex.join(command))
    assert (params["top"], params["device"], params["address"], params["out"]) == (1000, "trnsim", "auto", "/results/trnsim/adhoc")
    subprocess.run(["bash", "-n", str(CLUSTER / "job-submit.sh")], check=True)


def test_job_submit_script_takes_its_settings_from_the_environment(tmp_path):
    args = _submitted(tmp_path, RAY_ADDRESS="http://10.0.0.5:8265", SWEEP_DEVICE="cpu", SWEEP_TOP="7",
                      SWEEP_TIMEOUT="30", SWEEP_OUT="/data/out", SWEEP_JOB_ID="nightly-1",
                      SWEEP_WORKING_DIR="/src/sweeper", SWEEP_EXTRA="--source zoo --stages load,forward")
    split = args.index("--")
    options = _options(args[:split])
    assert (options["--address"], options["--submission-id"], options["--working-dir"]) == ("http://10.0.0.5:8265", "nightly-1", "/src/sweeper")
    params = _parses(shlex.join(args[split + 1:]))
    assert (params["top"], params["device"], params["timeout"], params["out"]) == (7, "cpu", 30.0, "/data/out")
    assert (params["source"], list(params["stages"])) == ("zoo", ["load,forward"])


@pytest.fixture
def fake_sweep(tmp_path: Path) -> Path:
    """A ``sweep`` on PATH that logs its arguments and writes what a finished sweep leaves."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    stub = bin_dir / "sweep"
    stub.write_text(
        "#!/usr/bin/env bash\n"
        'echo "$*" >> "$SWEEP_LOG"\n'
        'if [[ "$1" == diff && "$2" == --expected ]]; then echo "judged $4 against $3"; exit "${FAKE_GATE:-0}"; fi\n'
        'if [[ "$1" == diff ]]; then echo "diff $2 $3"; exit 0; fi\n'
        'if [[ "$1" == history ]]; then exit 0; fi\n'
        'while [[ $# -gt 0 ]]; do if [[ "$1" == --out ]]; then mkdir -p "$2"; touch "$2/report.md"; fi; shift; done\n'
    )
    stub.chmod(0o755)
    return bin_dir


def test_nightly_script_sweeps_then_diffs_against_the_previous_night(tmp_path, fake_sweep):
    results = tmp_path / "results"
    (results / "trnsim" / "2000-01-01").mkdir(parents=True)
    (results / "trnsim" / "2000-01-01" / "report.md").touch()
    (results / "trnsim" / "2000-01-02").mkdir()  # unfinished: no report, never diffed against
    log = tmp_path / "log"
    env = {**os.environ, "PATH": f"{fake_sweep}:{os.environ['PATH']}", "SWEEP_RESULTS": str(results), "SWEEP_LOG": str(log)}
    subprocess.run(["bash", str(CLUSTER / "nightly.sh")], check=True, env=env, capture_output=True)
    sweep_line, diff_line, history_line = log.read_text().splitlines()
    params = _parses("sweep " + sweep_line)
    assert (params["top"], params["device"], params["address"]) == (1000, "trnsim", "auto")
    assert params["cache"] == str(results / "trnsim" / "cache")  # a night re-runs only what changed
    assert params["recheck"] is None  # SWEEP_RECHECK unset: no recheck
    tonight = Path(params["out"])
    assert diff_line == f"diff {results / 'trnsim' / '2000-01-01'} {tonight}"
    assert (tonight / "diff.md").read_text().startswith("diff ")
    assert (results / "trnsim" / "latest").resolve() == tonight.resolve()
    history = _subcommand(history_line)
    assert (list(map(str, history["runs"])), str(history["out"])) == ([str(results / "trnsim")], str(tonight))


def _subcommand(line: str) -> dict:
    """A subcommand's parameters as the real CLI parses ``line`` (``history RUN --out DIR``)."""
    args = shlex.split(line)
    group = typer.main.get_command(app)
    command = group.get_command(group.make_context("sweep", []), args[0])
    return command.make_context(args[0], args[1:]).params


@pytest.mark.parametrize("gate", [0, 1])
def test_nightly_script_gates_on_the_expected_results(tmp_path, fake_sweep, gate):
    results, log, expected = tmp_path / "results", tmp_path / "log", CLUSTER / "expected" / "trnsim.csv"
    env = {**os.environ, "PATH": f"{fake_sweep}:{os.environ['PATH']}", "SWEEP_RESULTS": str(results),
           "SWEEP_LOG": str(log), "SWEEP_EXPECTED": str(expected), "FAKE_GATE": str(gate),
           "SWEEP_RECHECK": "5", "SWEEP_NIGHT": "2000-01-03"}
    proc = subprocess.run(["bash", str(CLUSTER / "nightly.sh")], env=env, capture_output=True, text=True)
    assert proc.returncode == gate, proc.stderr
    params = _parses("sweep " + log.read_text().splitlines()[0])
    tonight = Path(params["out"])
    assert tonight == results / "trnsim" / "2000-01-03" and params["recheck"] == 5.0
    assert log.read_text().splitlines()[-1] == f"diff --expected {expected} {tonight}"
    assert str(_subcommand(log.read_text().splitlines()[-1])["expected"]) == str(expected)
    assert (tonight / "expected.txt").read_text() == f"judged {tonight} against {expected}\n"
    assert f"judged {tonight}" in proc.stdout
    cron = yaml.safe_load(_load("raycronjob.yaml")["spec"]["jobTemplate"]["runtimeEnvYAML"])["env_vars"]
    assert cron["SWEEP_EXPECTED"] == "/app/configs/cluster/expected/trnsim.csv"  # the image's copy of the file
    assert float(cron["SWEEP_RECHECK"]) == 5
    assert next(csv.reader(expected.open())) == ["model", "outcome", "blocking_op", "signature", "tracking"]


@pytest.mark.parametrize(
    ("setting", "mode"),
    [({"RAY_AUTH_TOKEN": "env-token-123456"}, "token"), ({"RAY_AUTH_TOKEN_PATH": "FILE"}, "token"), ({"HOME_TOKEN": "1"}, "token"),
     ({}, "unset"), ({"RAY_AUTH_MODE": "disabled", "HOME_TOKEN": "1"}, "disabled")],
    ids=["env-token", "token-file", "home-token", "no-token", "mode-kept"],
)
def test_job_submit_script_sends_the_token_the_way_ray_reads_it(tmp_path: Path, setting: dict[str, str], mode: str) -> None:
    """``ray job submit`` sends the token only with RAY_AUTH_MODE=token: the script sets it
    when a token is at hand, and never puts the token on the command line or in the job."""
    setting, home = dict(setting), tmp_path / "home"
    (home / ".ray").mkdir(parents=True)
    if setting.pop("HOME_TOKEN", None):
        (home / ".ray" / "auth_token").write_text("home-token-123456")
    if setting.get("RAY_AUTH_TOKEN_PATH") == "FILE":
        (tmp_path / "token").write_text("file-token-123456")
        setting["RAY_AUTH_TOKEN_PATH"] = str(tmp_path / "token")
    args = _submitted(tmp_path, HOME=str(home), **setting)
    assert (tmp_path / "ray.log.mode").read_text() == mode
    assert not [a for a in args if "token-123456" in a], args
