"""``sweep publish OUT --to DIR | hf://datasets/ORG/NAME``.

A folder gets everything a reader needs: index.html (the searchable page), report.md and
the detail pages it links to (details/), charts, summary.json, records.parquet, sweep.json,
the lowering-tool reproducers (repros/*.py with their *.json outcomes), the history when
``sweep history`` wrote one into the sweep folder (history.md, history.html, history.json,
history-charts/), and a dataset card (README.md) whose front matter points the Hub's
viewer at the Parquet file. On the Hub, the records go up
as a ``datasets`` dataset, the report files (records.parquet too) beside them.
"""

from __future__ import annotations

import contextlib
import json
import re
import shutil
import tempfile
from pathlib import Path
from typing import Any

from sweeper.redact import redact
from sweeper.report import commands
from sweeper.report.escape import code, md, num, one_line, pct
from sweeper.settings.errors import UsageError
from sweeper.storage.folder import (
    CARD,
    CHARTS,
    DETAILS,
    HISTORY,
    HISTORY_CHARTS,
    HISTORY_JSON,
    HISTORY_PAGE,
    PARQUET,
    PUBLISH_MARKER,
    PUBLISHED,
    REPORT,
    REPROS,
    SUMMARY,
    SweepFolder,
)
from sweeper.storage.staged import Staged
from sweeper.storage.sweep_meta import SweepMeta

HUB_TARGET = re.compile(r"^hf://datasets/([A-Za-z0-9][\w.-]*)/([A-Za-z0-9][\w.-]*)$")
HUB_DATA_FILES = "data/train-*"
HISTORY_FILES = (HISTORY, HISTORY_PAGE, HISTORY_JSON)
# Beside the report: folders copied whole (when present), and the reproducers' file types.
FOLDERS = (CHARTS, DETAILS, HISTORY_CHARTS)
REPRO_FILES = ("*.py", "*.json")
TEXT_SUFFIXES = {".md", ".json", ".html", ".txt"}  # redacted on the way, as ``Staged.copy`` does
HUB_FILES = [CARD, "*.md", "*.json", "*.html", PARQUET, f"{CHARTS}/*.png", f"{DETAILS}/*.md",
             f"{HISTORY_CHARTS}/*.png", *(f"{REPROS}/{p}" for p in REPRO_FILES)]


COLUMNS_NOTE = (
    "Columns: `key`, `model_id`, `rank`, `downloads`, `pipeline_tag`, `model_type`, `status` "
    "(pass/fail/skip/timeout/crash/error), `category` (pass/device/lowering_tool/harness/model/environment/skip: "
    "the record's outcome, decided once over all its blockers), `reason_*` (the blocker that decided it, "
    "with its `reason_origin`), `stage_*` "
    "(pass/fail/blocked/skip per stage), `blockers` (kind, op, message, origin, stage), `fallback_ops`, "
    "`graph_break_reasons`, `compile_problems`, `repro` (the command that reruns one model)."
)


def publish(out_dir: Path, to: str, *, compare: Path | None = None, force: bool = False) -> str:
    """Publish a sweep: a self-contained folder, or ``hf://datasets/ORG/NAME`` on the Hub.
    ``compare``: another sweep's folder; the page then marks what each model fixed or
    regressed against it. Returns where it went."""
    if to.startswith("hf://"):
        return publish_hub(Path(out_dir), to, compare=compare)
    return publish_folder(Path(out_dir), Path(to), compare=compare, force=force)


def publish_folder(out_dir: Path, dest: Path, *, compare: Path | None = None, force: bool = False) -> str:
    """Rebuild the report from the records and copy it, with a dataset card, to ``dest``;
    with ``compare`` (another sweep's folder) the page marks fixed / regressed models.

    ``dest`` must be new, empty, or an earlier publish (it holds ``PUBLISH_MARKER``);
    ``force`` publishes over anything else. Files are staged and renamed together.
    """
    out_dir, dest = Path(out_dir), Path(dest)
    if dest.resolve() == out_dir.resolve():
        raise UsageError(f"--to must be another folder than the sweep folder {out_dir}")
    if dest.exists() and not dest.is_dir():
        raise UsageError(f"--to {dest} exists and is not a folder")
    if not force and dest.is_dir() and any(dest.iterdir()) and not (dest / PUBLISH_MARKER).is_file():
        raise UsageError(f"--to {dest} is a non-empty folder that sweep publish did not write; use --force to publish over it")
    old = None
    if compare is not None:  # read first: a bad --compare leaves DEST untouched
        from sweeper.report.load import read_sweep

        if Path(compare).resolve() == out_dir.resolve():
            raise UsageError(f"--compare must name another sweep than {out_dir}")
        old = read_sweep(Path(compare))
    commands.write_report(out_dir)
    try:
        dest.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise UsageError(f"cannot write into {dest}: {exc.strerror or exc}") from None
    sweep = SweepFolder(out_dir)
    summary = sweep.read_summary()
    with Staged(dest) as staged:
        for name in (*PUBLISHED, *HISTORY_FILES):
            if (sweep / name).is_file():
                staged.copy(sweep / name, name)
            else:
                staged.remove(name)
        for name in FOLDERS:  # replaced whole: a stale page or chart of an earlier publish goes
            _copy_files(sweep / name, ("*",), staged.folder_path(name))
        _copy_files(sweep.repros, REPRO_FILES, staged.folder_path(REPROS))
        staged.text(CARD, dataset_card(summary, sweep.read_meta()))
        staged.text(PUBLISH_MARKER, f"written by sweep publish from {out_dir.resolve()}\n")
    for name in (*FOLDERS, REPROS):  # a folder the sweep has none of is not published empty
        with contextlib.suppress(OSError):
            (dest / name).rmdir()
    if old is not None:
        sweep_id = old.meta.sweep_id
        compared_page(out_dir, old, dest, label=f"{Path(compare).name} (sweep {sweep_id})" if sweep_id else Path(compare).name)
    return str(dest)


def _copy_files(source: Path, patterns: tuple[str, ...], into: Path) -> None:
    """Copy the files of ``source`` (not its subfolders) matching ``patterns`` into ``into``;
    text passes the redactor, as everything else a publish writes."""
    if not source.is_dir():
        return
    for path in sorted({p for pattern in patterns for p in source.glob(pattern) if p.is_file()}):
        if path.suffix in TEXT_SUFFIXES:
            (into / path.name).write_text(redact(path.read_text(encoding="utf-8", errors="replace")), encoding="utf-8")
        else:
            shutil.copyfile(path, into / path.name)


def compared_page(out_dir: Path, old: Any, dest: Path, *, label: str) -> Path:
    """Write ``dest/index.html`` for ``out_dir`` with each model's change against ``old``
    (another sweep's ``SweepData``, named ``label`` on the page)."""
    from sweeper.report.analysis import analyse
    from sweeper.report.diff import compare
    from sweeper.report.document import CHART_TITLES
    from sweeper.report.load import read_sweep
    from sweeper.report.page import write_page

    new = read_sweep(out_dir)
    charts = SweepFolder(dest).chart_names(list(CHART_TITLES))
    return write_page(analyse(new), dest, charts=charts, compare=compare(old, new), compare_name=str(label))


def dataset_card(summary: dict[str, Any], meta: SweepMeta, *, data_files: str = PARQUET) -> str:
    """README.md for the published folder or Hub dataset (YAML front matter + prose);
    ``data_files`` is where the records table lies in it."""
    device = meta.device_spec or "unknown device"
    source = meta.source or {}
    title = f"Model sweep on {device}"
    if source.get("snapshot_date"):
        title += f" ({source.get('name') or 'catalog'}, {source['snapshot_date']})"
    o, c = summary["overview"], summary.get("coverage")
    # JSON strings are valid YAML scalars, so outside text cannot break the front matter.
    front = [
        "---",
        f"pretty_name: {json.dumps(one_line(title))}",
        "tags: [sweeper, model-coverage, pytorch]",
        "configs:",
        "- config_name: default",
        "  data_files:",
        "  - split: train",
        f"    path: {json.dumps(data_files)}",
        "---",
    ]
    lines = [
        f"# {md(title)}",
        "",
        (
            f"One row per model tried by `sweeper` (sweep {code(meta.sweep_id or 'unknown')}): "
            "whether it loads, moves to the device, runs forward and backward and compiles, and what blocks it."
        ),
        "",
        (
            f"- models: {num(o['models'])}; device pass rate {pct(o['pass_rate'])} "
            f"({num(o['passed'])} of {num(o['tested'])} tried on the device)"
        ),
    ]
    if c:
        lines.append(f"- {pct(c['catalog_share'])} of the catalog's downloads run end to end")
    lines += [
        (
            f"- full report: [{REPORT}]({REPORT}); machine-readable: "
            f"[{SUMMARY}]({SUMMARY}); records: [{PARQUET}]({PARQUET})"
        ),
        "",
        COLUMNS_NOTE,
    ]
    return "\n".join(front) + "\n\n" + "\n".join(lines) + "\n"


def records_dataset(out_dir: Path) -> Any:
    """The sweep's records as a ``datasets.Dataset`` (the records.parquet table)."""
    import datasets
    from datasets.table import InMemoryTable

    from sweeper.report.export import to_arrow
    from sweeper.report.load import read_sweep

    return datasets.Dataset(InMemoryTable(to_arrow(read_sweep(Path(out_dir)))))


def publish_hub(out_dir: Path, to: str, *, compare: Path | None = None) -> str:
    """Push the records as a dataset to ``hf://datasets/ORG/NAME``, the report beside them."""
    match = HUB_TARGET.match(to)
    if not match:
        raise UsageError(f"--to {to!r}: expected a folder or hf://datasets/ORG/NAME")
    repo_id = f"{match.group(1)}/{match.group(2)}"
    from huggingface_hub import HfApi, constants

    dataset = records_dataset(out_dir)
    with tempfile.TemporaryDirectory() as tmp:
        publish_folder(out_dir, Path(tmp), compare=compare)
        # push_to_hub stores the records under data/: the card must point there.
        published = SweepFolder(tmp)
        card = dataset_card(published.read_summary(), SweepFolder(out_dir).read_meta(), data_files=HUB_DATA_FILES)
        (published / CARD).write_text(card, encoding="utf-8")
        try:
            dataset.push_to_hub(repo_id, commit_message="Sweep records")
            HfApi().upload_folder(
                folder_path=tmp,
                repo_id=repo_id,
                repo_type="dataset",
                allow_patterns=HUB_FILES,
                commit_message="Sweep report",
            )
        except (OSError, ValueError) as exc:  # HTTP errors subclass OSError in huggingface_hub
            raise UsageError(f"could not publish to {to}: {one_line(exc, 300)}") from None
    return f"{constants.ENDPOINT}/datasets/{repo_id}"
