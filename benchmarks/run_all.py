"""Run every benchmark in this folder (``make bench``) and print each one's figures.

Each benchmark is registered below with the arguments ``make bench`` gives it (sizes that
finish in minutes on a 2-core laptop; run a script alone for its full size). Benchmarks
print their own figures; their last line is a machine-readable summary
(``name key=value ...``), collected at the end. Pass names to run a subset:
``python benchmarks/run_all.py throughput report_scale``.
"""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent

# name -> arguments for `make bench`. A benchmark file missing here fails the run: register it.
BENCHMARKS: dict[str, list[str]] = {
    "throughput": ["--models", "8", "--workers", "2"],
    "executors": ["--models", "20", "--scale", "20000"],
    "report_scale": [],
    "trnsim_overhead": ["--quick"],
    "compile_profile": ["--models", "10"],
    "hub_faults": ["--models", "100"],
    "page_scale": [],
    "scale": ["--rows", "20000", "--device", "cpu", "--stages", "load,forward"],
    "zoo_coverage": ["--top", "50"],
    "shapes_cost": ["--top", "4"],
    "gradient_compare": ["--repeats", "5"],
}
# Scripts that read a sweep's records or logs instead of measuring (run them on a sweep's
# output): ``make bench`` has nothing to give them.
RECORD_TOOLS = frozenset({"compare_records", "check_order", "floor", "lowering_repeats", "numerics_verdicts",
                          "reference_gradients"})


def main(names: list[str]) -> int:
    """Run the registered benchmarks (or those named); print outputs and a summary."""
    present = {p.stem for p in HERE.glob("*.py") if p.name != Path(__file__).name}
    unregistered = sorted(present - set(BENCHMARKS) - RECORD_TOOLS)
    if unregistered:
        print(f"benchmarks not registered in run_all.py: {', '.join(unregistered)}", file=sys.stderr)
        return 2
    unknown = sorted(set(names) - set(BENCHMARKS))
    if unknown:
        print(f"unknown benchmark(s): {', '.join(unknown)}; known: {', '.join(BENCHMARKS)}", file=sys.stderr)
        return 2
    summaries, failed = [], []
    for name in names or list(BENCHMARKS):
        args = BENCHMARKS[name]
        print(f"== {name} {' '.join(args)}".rstrip(), flush=True)
        started = time.monotonic()
        proc = subprocess.run([sys.executable, str(HERE / f"{name}.py"), *args], text=True, capture_output=True)
        print(proc.stdout, end="", flush=True)
        if proc.returncode != 0:
            failed.append(name)
            print(proc.stderr[-2000:], file=sys.stderr)
        lines = [ln for ln in proc.stdout.splitlines() if ln.strip()]
        summaries.append(f"{lines[-1] if lines else name + ' (no output)'}  [{time.monotonic() - started:.0f}s]")
    print("\n== summary")
    print("\n".join(summaries))
    if failed:
        print(f"failed: {', '.join(failed)}", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
