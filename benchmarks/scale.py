"""One sweep over 100,000 models: wall time, the driver's cost per model, its memory, the report.

The catalog is the top-1,000 snapshot's rows repeated under distinct ids (copy 0 keeps the
real ids, copy k names ``org/name--k``); each row keeps its model type, library, task and
downloads, so the mix of checks is the Hub's and most models share a check with an earlier
one (``sweeper.storage.reuse``). The sweep runs in a fresh child process (the driver), so its peak
RSS is the driver's alone; the executor's workers are other processes.

    python benchmarks/scale.py [--rows 100000] [--device trnsim] [--stages ...]
                               [--executor ray] [--cache DIR] [--upgrade PACKAGE] [--profile] [--out DIR] [--keep]

Printed: wall time, models per minute, distinct checks run, the driver's peak RSS, the
size of records.jsonl, the driver's wall time per reused model (when no check ran, as in a
``--cache`` rerun: the wall time over the models, planning included), then the time and peak RSS of
``sweep report`` (report.md + page + Parquet). The last line reads
``scale rows=N wall_s=S models_per_min=M checks=C driver_peak_rss_mib=R records_mib=J
reused_ms_per_model=U report_s=T report_peak_mib=P``.

``--cache DIR`` passes ``--cache`` to the sweep: run twice with the same DIR to time a
nightly where nothing changed; add ``--upgrade sentence-transformers`` to time a nightly after
that one library was upgraded (only its models' checks run again; the checks that ran are
counted per library).
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
SNAPSHOT = Path(os.environ.get("SWEEPER_SHARED", REPO.parent / "shared")) / "catalogs" / "hub-top1000-2025-03.csv"
COLUMNS = ("rank", "id", "downloads", "pipeline_tag", "library_name", "model_type")


def write_catalog(rows: int, dst: Path, *, snapshot: Path = SNAPSHOT) -> int:
    """``rows`` catalog rows made from ``snapshot``'s, repeated under distinct ids; returns
    how many the snapshot has."""
    with snapshot.open(newline="", encoding="utf-8") as fh:
        base = [{k: row.get(k, "") for k in COLUMNS} for row in csv.DictReader(fh)]
    with dst.open("w", newline="", encoding="utf-8") as fh:
        out = csv.writer(fh)
        out.writerow(COLUMNS)
        for i in range(rows):
            row = base[i % len(base)]
            copy = i // len(base)
            model_id = row["id"] if copy == 0 else f"{row['id']}--{copy}"
            out.writerow([i + 1, model_id, *(row[k] for k in COLUMNS[2:])])
    return len(base)


def child(spec: str) -> int:
    """The driver: one sweep as ``sweep`` runs it; prints its figures as JSON on the last line."""
    opts = json.loads(spec)
    upgrade = opts.pop("upgrade", None)
    if upgrade:  # a nightly after `pip install -U PKG`, without installing anything
        from sweeper.checks import versions

        real = versions.package_version
        versions.package_version = lambda name: f"{real(name)}.post1" if name == upgrade else real(name)
    from sweeper.runner import run_sweep
    from sweeper.settings.config import build_config

    profile = opts.pop("profile", False)
    cfg = build_config(opts)
    profiler = None
    if profile:
        import cProfile

        profiler = cProfile.Profile()
        profiler.enable()
    started = time.perf_counter()
    result = run_sweep(cfg, quiet=False, write_report=False)
    wall = time.perf_counter() - started
    rss_kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    figures = {"wall_s": wall, "total": result.total, "peak_rss_mib": rss_kib / 1024}
    if profiler is not None:
        profiler.disable()
        figures["phases_s"] = driver_phases(profiler)
    print(json.dumps(figures))
    return 0


# Where the driver's time goes, by the functions that do each part (cumulative time).
PHASES = {
    "reading the catalog": [("sources/catalog.py", "refs")],
    "fingerprinting": [("sweeper/storage/fingerprint.py", "__call__")],
    "copying records": [("sweeper/storage/reuse.py", "_copy")],
    "writing records": [("sweeper/storage/store.py", "append_all")],
    "progress": [("sweeper/report/terminal_bar.py", "update")],
}


def driver_phases(profiler) -> dict[str, float]:
    """Seconds per phase (``PHASES``) from a cProfile of the driver."""
    import pstats

    stats = pstats.Stats(profiler).stats  # type: ignore[attr-defined]
    out = {}
    for phase, funcs in PHASES.items():
        out[phase] = sum(
            ct for (path, _, name), (_, _, _, ct, _) in stats.items()
            if any(path.endswith(p) and name == n for p, n in funcs)
        )  # fmt: skip
    return out


def ran_checks(records: Path) -> tuple[int, float, dict[str, int]]:
    """(checks that ran this sweep, their seconds added up, checks per library): records
    not copied from another model's."""
    count, seconds, libraries = 0, 0.0, {}
    with records.open(encoding="utf-8") as fh:
        for line in fh:
            raw = json.loads(line)
            if not raw.get("reused_from") and "cached_from_sweep" not in (raw.get("notes") or {}):
                count += 1
                seconds += float(raw.get("seconds") or 0.0)
                library = raw.get("library_name") or "(none)"
                libraries[library] = libraries.get(library, 0) + 1
    return count, seconds, libraries


def run_report(out: Path) -> tuple[float, float]:
    """(seconds, peak RSS MiB) of ``sweep report OUT`` in its own process."""
    code = (
        "import resource,sys,time;from pathlib import Path;from sweeper.report.commands import write_report;"
        "t=time.perf_counter();write_report(Path(sys.argv[1]));"
        "print(time.perf_counter()-t, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss/1024)"
    )
    proc = subprocess.run([sys.executable, "-c", code, str(out)], capture_output=True, text=True, env=_env())
    if proc.returncode != 0:
        raise SystemExit(f"scale: sweep report failed: {proc.stderr.strip().splitlines()[-1:]}")
    seconds, rss = proc.stdout.split()[-2:]
    return float(seconds), float(rss)


def _env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")]))}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=100_000)
    ap.add_argument("--device", default="trnsim")
    ap.add_argument("--stages", default=None, help="comma-separated; default: every stage")
    ap.add_argument("--executor", default=None, help="default: the sweep's default (ray)")
    ap.add_argument("--cache", default=None, help="a --cache folder (run twice for a nightly with nothing changed)")
    ap.add_argument("--upgrade", default=None, metavar="PACKAGE",
                    help="pretend PACKAGE was upgraded (its version + '.post1') to time a one-library nightly")
    ap.add_argument("--profile", action="store_true", help="cProfile the driver: its time per model by phase")
    ap.add_argument("--out", default=None, help="output folder (default: a temporary one, removed)")
    ap.add_argument("--keep", action="store_true", help="keep the temporary output folder")
    ap.add_argument("--no-report", action="store_true")
    ap.add_argument("--child", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.child:
        return child(args.child)
    if not SNAPSHOT.exists():
        print(f"scale: snapshot not found: {SNAPSHOT} (set SWEEPER_SHARED to the folder holding catalogs/)", file=sys.stderr)
        return 2
    work = Path(tempfile.mkdtemp(prefix="sweeper-scale-"))
    out = Path(args.out) if args.out else work / "out"
    try:
        return _measure(args, work, out)
    finally:
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)


def _measure(args: argparse.Namespace, work: Path, out: Path) -> int:
    catalog = work / f"scale-{args.rows}.csv"
    base = write_catalog(args.rows, catalog)
    opts: dict = {"source": "catalog", "catalog": str(catalog), "device": args.device, "out": str(out)}
    for key in ("stages", "executor", "cache", "upgrade", "profile"):
        if getattr(args, key):
            opts[key] = getattr(args, key)
    print(f"scale: {args.rows} rows from {base} snapshot rows; device {args.device}; out {out}", flush=True)
    log = work / "driver.log"
    with log.open("w") as fh:
        proc = subprocess.run([sys.executable, __file__, "--child", json.dumps(opts)], stdout=subprocess.PIPE,
                              stderr=fh, text=True, env=_env())  # fmt: skip
    if proc.returncode != 0:
        print(log.read_text()[-3000:], file=sys.stderr)
        return 1
    figures = json.loads(proc.stdout.strip().splitlines()[-1])
    records = out / "records.jsonl"
    checks, check_s, libraries = ran_checks(records)
    wall = figures["wall_s"]
    reused = max(1, figures["total"] - checks)
    # Only a run where no check ran measures the driver alone (with checks, its work hides
    # behind theirs): then wall time per model, planning and start-up included, bounds it.
    driver_ms = wall / reused * 1000 if checks == 0 else float("nan")
    summary = {
        "rows": figures["total"], "wall_s": round(wall, 1), "models_per_min": round(figures["total"] / wall * 60),
        "checks": checks, "driver_peak_rss_mib": round(figures["peak_rss_mib"]),
        "records_mib": round(records.stat().st_size / 2**20, 1), "reused_ms_per_model": round(driver_ms, 2),
    }
    print(f"sweep: {wall:.1f} s for {figures['total']} models ({summary['models_per_min']}/min); {checks} checks ran "
          f"({check_s:.0f} s of checks); driver peak RSS {figures['peak_rss_mib']:.0f} MiB; records.jsonl "
          f"{summary['records_mib']} MiB; driver wall time per reused model: "
          f"{f'<= {driver_ms:.2f} ms' if checks == 0 else 'n/a (checks ran; time a --cache rerun)'}")  # fmt: skip
    top = sorted(libraries.items(), key=lambda kv: -kv[1])
    print("checks that ran, by library: " + (", ".join(f"{k} {v}" for k, v in top) or "none"))
    if "phases_s" in figures:
        per = {k: v / max(1, figures["total"]) * 1e6 for k, v in figures["phases_s"].items()}
        print("driver per model under cProfile (inflated ~2x; reading includes refs not yet planned): "
              + ", ".join(f"{k} {v:.0f} us" for k, v in per.items()))  # fmt: skip
    if not args.no_report:
        seconds, rss = run_report(out)
        summary.update(report_s=round(seconds, 1), report_peak_mib=round(rss))
        print(f"report: {seconds:.1f} s, peak RSS {rss:.0f} MiB (report.md, page, Parquet)")
    print("scale " + " ".join(f"{k}={v}" for k, v in summary.items()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
