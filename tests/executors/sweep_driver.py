"""A sweep driver the resume tests start and SIGKILL: the real runner and store, a test check.

Usage: python sweep_driver.py OUT EXECUTOR CATALOG TOP
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from executor_faults import slow_check

from sweeper.runner import run_sweep
from sweeper.settings.config import build_config


def main(out: str, executor: str, catalog: str, top: str) -> None:
    """Run (or resume) the sweep into ``out``."""
    cfg = build_config(
        {"out": out, "executor": executor, "source": "catalog", "catalog": catalog, "top": int(top),
         "device": "cpu", "workers": 2, "worker_max_models": 10}
    )
    run_sweep(cfg, check=slow_check, quiet=True, write_report=False)


if __name__ == "__main__":
    main(*sys.argv[1:5])
