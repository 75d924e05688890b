"""The committed reports name no folder of the machine that made them: their repro
commands describe each catalog model instead of naming the catalog file, and error texts
name places (``<tmp>``, ``<site-packages>``), not the machine's paths."""

from __future__ import annotations

import os
import re
import shlex
import tempfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
REPORTS = sorted(p for p in (ROOT / "reports").iterdir() if (p / "records.jsonl").is_file()) if (ROOT / "reports").is_dir() else []
# An absolute path under a folder where machines keep files (Linux, macOS, containers),
# not preceded by what would make it part of a word, a URL or a relative path.
MACHINE_PATH = re.compile(r"(?<![\w.:/~<>…-])/(?:home|root|tmp|work|workspace|Users|opt|usr|var|mnt|data|srv|scratch)/")


@pytest.mark.parametrize("folder", REPORTS, ids=[p.name for p in REPORTS])
def test_no_file_of_a_published_report_names_a_machine_path(folder: Path):
    here = {str(ROOT), os.path.expanduser("~") + "/", tempfile.gettempdir() + "/"}
    for path in sorted(folder.rglob("*")):
        # Hidden entries are the sweep's own state beside its report (the lowering verdicts
        # its workers share, its lock): ignored by git, never published.
        if not path.is_file() or any(part.startswith(".") for part in path.relative_to(folder).parts):
            continue
        text = path.read_bytes().decode("utf-8", "replace")
        found = sorted({m.group(0) for m in MACHINE_PATH.finditer(text)} | {p for p in here if p in text})
        assert not found, f"{path.relative_to(ROOT)} names {found}"


@pytest.mark.parametrize("folder", REPORTS, ids=[p.name for p in REPORTS])
def test_published_repros_run_without_the_catalog_file(folder: Path):
    import json

    with open(folder / "records.jsonl", encoding="utf-8") as handle:
        repros = [json.loads(line)["repro"] for line in handle if line.strip()]
    assert repros and all(shlex.split(r)[:2] == ["sweep", "one"] and "--catalog" not in shlex.split(r) for r in repros)
