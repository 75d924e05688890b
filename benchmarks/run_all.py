"""Run every benchmark in this folder (``make bench``) and print each one's closing figures.

Benchmarks print their own figures; their last line is a machine-readable summary
(``name key=value ...``). Pass names to run a subset: ``python benchmarks/run_all.py report_scale``.
"""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent


def main(names: list[str]) -> int:
    scripts = sorted(p for p in HERE.glob("*.py") if p.name != Path(__file__).name)
    if names:
        scripts = [p for p in scripts if p.stem in names]
    summaries, failed = [], []
    for script in scripts:
        print(f"== {script.stem}", flush=True)
        started = time.monotonic()
        proc = subprocess.run([sys.executable, str(script)], text=True, capture_output=True)
        print(proc.stdout, end="")
        if proc.returncode != 0:
            failed.append(script.stem)
            print(proc.stderr[-2000:], file=sys.stderr)
        lines = [ln for ln in proc.stdout.splitlines() if ln.strip()]
        summaries.append(f"{lines[-1] if lines else script.stem + ' (no output)'}  [{time.monotonic() - started:.0f}s]")
    print("\n== summary")
    print("\n".join(summaries))
    if failed:
        print(f"failed: {', '.join(failed)}", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
