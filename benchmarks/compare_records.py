"""Compare two sweeps' records model by model, leaving out what differs run to run.

    python benchmarks/compare_records.py OLD NEW        # sweep folders or records.jsonl files

Left out: timings (every ``seconds``, ``compile_phases``, timings inside messages such as ``after 3.1s``),
``sweep_id``, ``peak_memory_bytes``, the check ``fingerprint`` (it hashes sweeper's own
source, so any code change moves it), timestamps, object addresses in messages (``at
0x7f...``), integers of 12 digits or more in messages (uninitialised dimensions Torch-MLIR
prints, ``tensor<3x512x16x281096369887616xf32>``, change run to run) and each sweep's own
folder inside messages (reproducer paths: absolute, relative to here, or with its machine part named,
``<tmp>/NAME``). Prints each differing field as
``model: path: old -> new``, models only one side has, and a last line with the counts;
exits 1 when anything differs (a refactoring that must not change records passes with 0).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from sweeper.machine_paths import strip_machine_paths  # noqa: E402

IGNORED_KEYS = frozenset({"seconds", "sweep_id", "peak_memory_bytes", "fingerprint", "started", "ended", "timestamp",
                          "compile_phases"})
# "after 3.1s", "in 0.42 s", "12.3 s": timings inside messages.
TIMING = re.compile(r"\b\d+(?:\.\d+)?\s?(?:s|ms|seconds)\b")
ADDRESS = re.compile(r"\b0x[0-9a-f]{6,}\b")
GARBAGE = re.compile(r"(?<=\D)\d{12,}(?=\D)")


def load(path: Path) -> dict[str, dict[str, Any]]:
    """Records by key (the last line of a key wins, as the sweep's own reader does)."""
    file = path / "records.jsonl" if path.is_dir() else path
    out: dict[str, dict[str, Any]] = {}
    for line in file.read_text(encoding="utf-8").splitlines():
        if line.strip():
            record = json.loads(line)
            out[record["key"]] = record
    return out


def normalise(value: Any, folder: str = "") -> Any:
    """``value`` without ignored keys; timings, addresses and ``folder`` in strings blanked."""
    if isinstance(value, dict):
        return {k: normalise(v, folder) for k, v in value.items() if k not in IGNORED_KEYS}
    if isinstance(value, list):
        return [normalise(v, folder) for v in value]
    if isinstance(value, str):
        if folder:
            # as written before records stripped machine paths, and as they write it now
            # (relative to the folder the sweep ran in, or with its machine part named)
            for written in (folder, os.path.relpath(folder), strip_machine_paths(folder)):
                value = value.replace(written, "<out>")
        return GARBAGE.sub("<n>", ADDRESS.sub("<addr>", TIMING.sub("<t>", value)))
    return value


def folder_of(path: Path) -> str:
    """The sweep folder as records name it (absolute, as the device writes reproducer paths)."""
    return str((path if path.is_dir() else path.parent).resolve())


def differences(old: Any, new: Any, path: str = "") -> list[tuple[str, Any, Any]]:
    """Every leaf that differs, as (dotted path, old, new)."""
    if isinstance(old, dict) and isinstance(new, dict):
        out: list[tuple[str, Any, Any]] = []
        for key in sorted(set(old) | set(new)):
            out += differences(old.get(key, "<absent>"), new.get(key, "<absent>"), f"{path}.{key}" if path else key)
        return out
    return [] if old == new else [(path, old, new)]


def compare(old_path: Path, new_path: Path) -> int:
    """Print the differences; the number of models that differ (or are on one side only)."""
    old, new = load(old_path), load(new_path)
    old_dir, new_dir = folder_of(old_path), folder_of(new_path)
    bad = 0
    for key in sorted(set(old) | set(new)):
        if key not in new or key not in old:
            print(f"{key}: only in {'old' if key in old else 'new'}")
            bad += 1
            continue
        diffs = differences(normalise(old[key], old_dir), normalise(new[key], new_dir))
        for where, a, b in diffs:
            print(f"{key}: {where}: {json.dumps(a, default=str)[:300]} -> {json.dumps(b, default=str)[:300]}")
        bad += bool(diffs)
    print(f"{len(old)} old, {len(new)} new records; {bad} differ")
    return bad


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("old", type=Path)
    parser.add_argument("new", type=Path)
    args = parser.parse_args(argv)
    return 1 if compare(args.old, args.new) else 0


if __name__ == "__main__":
    sys.exit(main())
