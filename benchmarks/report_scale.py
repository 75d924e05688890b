"""Report time and peak memory for a large synthetic sweep.

Records are shaped like the ~55,000-row 2022 Hub listing (its ids, downloads and tasks,
repeated with suffixes up to the requested count) with a realistic mix of outcomes:
passes, device failures with one to three blockers drawn from a long-tailed op list,
environment outcomes, skips, timeouts and crashes, CPU fallbacks and graph breaks.

    python benchmarks/report_scale.py [--records 100000] [--catalog PATH]

The report runs in a fresh child process so that its peak RSS is the report's alone (plus
the imports it needs). The last line reads
``report_scale records=N seconds=S peak_mib=M``.
"""

from __future__ import annotations

import argparse
import csv
import gzip
import json
import os
import random
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
CATALOG = Path(os.environ.get("SWEEPER_SHARED", REPO.parent / "shared")) / "catalogs" / "hub-models-2022-07.csv.gz"
STAGES = ["load", "to_device", "forward", "backward", "compile"]
OPS = [f"aten::{n}" for n in (
    "upsample_bilinear2d", "_thnn_fused_lstm_cell", "_thnn_fused_gru_cell", "upsample_bicubic2d",
    "linalg_eigh", "linalg_qr", "nonzero", "masked_select", "unique_dim", "_unique2", "index_put_",
    "_upsample_bilinear2d_aa", "cumsum", "logcumsumexp", "bucketize", "searchsorted", "histc",
    "grid_sampler_2d", "_embedding_bag", "fft_rfft", "fft_irfft", "_ctc_loss", "roll", "median",
    "kthvalue", "topk", "sort", "argsort", "scatter_reduce", "index_reduce", "lerp", "erfinv",
    "polar", "view_as_complex", "_fft_c2c", "triu_indices", "tril_indices", "bincount", "mode", "renorm",
)]  # fmt: skip
TYPES = ("bert", "roberta", "gpt2", "t5", "bart", "distilbert", "xlm-roberta", "wav2vec2", "vit", "electra",
         "marian", "deberta", "albert", "mt5", "pegasus", "gpt_neo", "clip", "whisper", "llama", "opt")  # fmt: skip
OUTCOMES = [("pass", 0.46), ("op", 0.24), ("other", 0.10), ("env", 0.10), ("skip", 0.06), ("dead", 0.04)]
OTHER = ["unsupported_dtype", "numerics", "graph_break", "compile_error", "dynamic_shape", "oom", "input_synthesis"]
ENV = ["gated", "remote_code", "unsupported_library", "download", "missing_dependency"]


def catalog_rows(path: Path, count: int) -> list[tuple[str, int, str]]:
    """(id, downloads, task) rows, repeated with a suffix until ``count``."""
    with gzip.open(path, "rt", encoding="utf-8") as fh:
        base = [(r["id"], int(r["downloads"] or 0), r["pipeline_tag"]) for r in csv.DictReader(fh)]
    base.sort(key=lambda r: -r[1])
    rows = []
    for i in range(count):
        model_id, downloads, task = base[i % len(base)]
        lap = i // len(base)
        rows.append((model_id if lap == 0 else f"{model_id}-v{lap}", downloads // (lap + 1), task))
    return sorted(rows, key=lambda r: -r[1])  # rank follows downloads, as in a Hub listing


def make_record(rng: random.Random, rank: int, model_id: str, downloads: int, task: str) -> dict:
    """One record dict in ``ModelRecord.to_dict`` shape."""
    outcome = rng.choices([o for o, _ in OUTCOMES], [w for _, w in OUTCOMES])[0]
    mt = next((t for t in TYPES if t in model_id.lower()), None)
    rec: dict = {"sweep_id": "bench", "model_id": model_id, "key": model_id, "device": "trnsim", "rank": rank,
                 "downloads": downloads, "pipeline_tag": task or None, "model_type": mt, "status": "pass",
                 "stages": {}, "reason": None, "blockers": [], "fallback_ops": {}, "graph_breaks": 0,
                 "graph_break_reasons": [], "compile_problems": [], "notes": {}, "schema_version": 1,
                 "repro": f"sweep one {model_id} --device trnsim --weights tiny"}  # fmt: skip
    blockers: list[dict] = []
    if outcome == "op":
        ops = rng.sample(OPS[: 5 + int(rng.paretovariate(1.2)) % 35], k=rng.choice([1, 1, 1, 2, 3]))
        blockers = [{"kind": "unsupported_op", "op": op, "message": f"no lowering for {op}"} for op in ops]
    elif outcome == "other":
        kind = rng.choice(OTHER)
        blockers = [{"kind": kind, "op": None, "message": f"{kind} in forward"}]
    elif outcome in ("env", "skip", "dead"):
        kind = {"env": rng.choice(ENV), "skip": "input_synthesis", "dead": rng.choice(["timeout", "crash"])}[outcome]
        rec["status"] = {"env": "error", "skip": "skip", "dead": kind}[outcome]
        rec["reason"] = {"kind": kind, "op": None, "message": f"{kind}: {model_id}"}
        rec["blockers"] = [rec["reason"]]
        if outcome == "dead":
            rec["notes"] = {"stage": rng.choice(STAGES[2:])}
        return rec
    fail_at = rng.choice(STAGES[2:]) if blockers else None
    state = "pass"
    for stage in STAGES:
        rec["stages"][stage] = {"status": "fail" if stage == fail_at else state, "seconds": 0.1, "reason": None}
        state = "blocked" if stage == fail_at else state
    if blockers:
        rec.update(status="fail", reason=blockers[0], blockers=blockers)
    if rng.random() < 0.3:
        rec["fallback_ops"] = {op: rng.randint(1, 50) for op in rng.sample(OPS[:12], k=rng.randint(1, 3))}
    if rng.random() < 0.1:
        rec["graph_breaks"] = rng.randint(1, 4)
        rec["graph_break_reasons"] = [f"data-dependent operator {rng.choice(OPS[6:10])}"]
    return rec


def generate(out: Path, count: int, catalog: Path) -> None:
    """Write records.jsonl and sweep.json for ``count`` synthetic models."""
    rng = random.Random(0)
    out.mkdir(parents=True, exist_ok=True)
    with open(out / "records.jsonl", "w", encoding="utf-8") as fh:
        rows = enumerate(catalog_rows(catalog, count), 1)
        fh.writelines(json.dumps(make_record(rng, rank, mid, dl, task)) + "\n" for rank, (mid, dl, task) in rows)
    sweep = {"sweep_id": "bench", "config": {"stages": STAGES, "weights": "tiny", "collect_all": True},
             "source": {"name": "catalog", "snapshot_date": "2022-07-02"}, "device": {"spec": "trnsim"},
             "started": "2022-07-03T00:00:00+00:00", "ended": "2022-07-03T09:00:00+00:00", "wall_seconds": 32400}  # fmt: skip
    (out / "sweep.json").write_text(json.dumps(sweep), encoding="utf-8")


def run_report(out: Path) -> None:
    """Child process: build the report, print seconds and peak RSS."""
    sys.path.insert(0, str(REPO))
    from sweeper.report.commands import write_report

    start, cpu = time.perf_counter(), time.process_time()
    write_report(out)
    seconds, cpu = time.perf_counter() - start, time.process_time() - cpu
    peak_mib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # Linux reports KiB
    print(json.dumps({"seconds": seconds, "cpu_seconds": cpu, "peak_mib": peak_mib}))


def main() -> None:
    """Generate the records, run the report in a child process, print the figures."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=100_000)
    parser.add_argument("--catalog", type=Path, default=CATALOG)
    parser.add_argument("--run", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.run:
        return run_report(args.run)
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "sweep"
        generate(out, args.records, args.catalog)
        size = (out / "records.jsonl").stat().st_size / 2**20
        child = subprocess.run([sys.executable, __file__, "--run", str(out)], capture_output=True, text=True, check=False)
        if child.returncode:
            sys.exit(child.stderr)
        figures = json.loads(child.stdout.strip().splitlines()[-1])
        report = (out / "report.md").stat().st_size / 2**20
        load = os.getloadavg()[0]  # other work on the machine stretches wall time, not CPU time
        print(f"records.jsonl {size:.1f} MiB; report.md {report:.1f} MiB; cpu {figures['cpu_seconds']:.2f} s; "
              f"load average {load:.1f} on {os.cpu_count()} CPUs")  # fmt: skip
    print(f"report_scale records={args.records} seconds={figures['seconds']:.2f} peak_mib={figures['peak_mib']:.0f}")
    print(catalog_listing(args.catalog))


def catalog_listing(path: Path) -> str:
    """CPU and wall seconds to list every row of the catalog as a sweep plans it."""
    sys.path.insert(0, str(REPO))
    from sweeper.sources.catalog import CatalogSource

    cpu, wall = time.process_time(), time.perf_counter()
    rows = sum(1 for _ in CatalogSource(path).refs())
    return f"catalog_listing rows={rows} cpu_s={time.process_time() - cpu:.2f} wall_s={time.perf_counter() - wall:.2f}"


if __name__ == "__main__":
    main()
