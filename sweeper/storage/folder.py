"""A sweep's output folder: the one place that names its files.

    OUT/records.jsonl           one record per model, appended by the driver (store.py)
    OUT/records.rejected.jsonl  lines set aside on resume because they were not records
    OUT/sweep.json              the sweep's identity and settings (``SweepMeta``)
    OUT/.sweep.lock             held while a sweep writes the folder (folder_lock.py)
    OUT/report.md, index.html, summary.json, records.parquet, charts/*.png   ``sweep report``
    OUT/diff.md                 ``sweep diff OLD OUT``
    OUT/history.md, history.html, history.json, history-charts/*.png   ``sweep history ... --out OUT``
    OUT/repros/                 standalone reproducers of lowering-tool failures (trnsim)

A published folder (``sweep publish``) holds the report files, a dataset card and a marker
saying that publish wrote it.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path

from sweeper.devices.base import REPROS
from sweeper.redact import redact_obj
from sweeper.settings.errors import UsageError
from sweeper.storage.sweep_meta import SweepMeta

RECORDS = "records.jsonl"
REJECTED = "records.rejected.jsonl"
META = "sweep.json"
LOCK = ".sweep.lock"
REPORT = "report.md"
PAGE = "index.html"
SUMMARY = "summary.json"
PARQUET = "records.parquet"
CHARTS = "charts"
DETAILS = "details"  # the report's detail pages, linked from report.md
DIFF = "diff.md"
HISTORY = "history.md"
HISTORY_PAGE = "history.html"
HISTORY_JSON = "history.json"
HISTORY_CHARTS = "history-charts"
# REPROS ("repros", imported above): named in devices.base, the layer of the devices that write it.
MODELS = "models.md"  # written by earlier versions: removed, index.html lists every model
CARD = "README.md"  # a published folder's dataset card
PUBLISH_MARKER = ".sweeper-publish"  # says a folder is a publish's own, so it may be overwritten
# What a publish copies from the sweep folder (models.md so that a stale copy is removed).
PUBLISHED = (REPORT, PAGE, MODELS, SUMMARY, PARQUET, META)


@dataclass(frozen=True)
class SweepFolder:
    """``OUT``: the paths of its files, and sweep.json read and written as ``SweepMeta``."""

    root: Path

    def __post_init__(self) -> None:
        object.__setattr__(self, "root", Path(self.root))

    def __truediv__(self, name: str) -> Path:
        return self.root / name

    @property
    def records(self) -> Path:
        return self.root / RECORDS

    @property
    def rejected(self) -> Path:
        return self.root / REJECTED

    @property
    def meta(self) -> Path:
        return self.root / META

    @property
    def lock(self) -> Path:
        return self.root / LOCK

    @property
    def report(self) -> Path:
        return self.root / REPORT

    @property
    def page(self) -> Path:
        return self.root / PAGE

    @property
    def summary(self) -> Path:
        return self.root / SUMMARY

    @property
    def charts(self) -> Path:
        return self.root / CHARTS

    @property
    def diff(self) -> Path:
        return self.root / DIFF

    @property
    def repros(self) -> Path:
        return self.root / REPROS

    def chart_names(self, names: list[str] | tuple[str, ...]) -> list[str]:
        """Those of ``names`` (chart file names, in order) present under charts/."""
        return [name for name in names if (self.charts / name).is_file()]

    def require_records(self) -> Path:
        """records.jsonl; ``UsageError`` when the folder is not a sweep's."""
        if not self.root.is_dir():
            raise UsageError(f"not a sweep folder: {self.root} does not exist or is not a directory")
        if not self.records.is_file():
            raise UsageError(f"no {RECORDS} in {self.root}: is it a sweep output folder?")
        return self.records

    def read_meta(self) -> SweepMeta:
        """sweep.json (``SweepMeta.missing()`` when absent); ``UsageError`` when it is not JSON."""
        if not self.meta.is_file():
            return SweepMeta.missing()
        try:
            data = json.loads(self.meta.read_text(encoding="utf-8"))
        except ValueError as exc:
            raise UsageError(f"{self.meta} is not valid JSON: {exc}") from None
        return SweepMeta.from_dict(data)

    def write_meta(self, meta: SweepMeta) -> None:
        """Replace sweep.json at once (written beside it, then renamed), secrets redacted."""
        tmp = self.root / (META + ".tmp")
        tmp.write_text(json.dumps(redact_obj(meta.to_dict()), indent=2, default=str) + "\n")
        os.replace(tmp, self.meta)

    def read_summary(self) -> dict:
        """summary.json as written by ``sweep report``."""
        return json.loads(self.summary.read_text(encoding="utf-8"))
