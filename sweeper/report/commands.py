"""What the CLI calls: ``sweep report``, ``sweep diff``, ``sweep publish``."""

from __future__ import annotations

import json
from pathlib import Path

from sweeper.report.analysis import analyse, summary
from sweeper.report.load import gc_paused, read_sweep

REPORT_FILE = "report.md"
MODELS_FILE = "models.md"  # written by earlier versions: removed, index.html lists every model
PAGE_FILE = "index.html"
SUMMARY_FILE = "summary.json"
PARQUET_FILE = "records.parquet"
CHARTS_DIR = "charts"
DIFF_FILE = "diff.md"


def write_report(out_dir: Path, *, charts: bool = True) -> Path:
    """Build report.md, index.html, summary.json, records.parquet and charts/*.png in
    ``out_dir`` from its records; return the path of report.md. Raises ``UsageError`` on bad input."""
    with gc_paused():  # the frames and lists of a large sweep live until the end
        return _write_report(Path(out_dir), charts=charts)


def _write_report(out_dir: Path, *, charts: bool) -> Path:
    from sweeper.report import markdown
    from sweeper.report.export import write_parquet
    from sweeper.report.page import write_page

    data = read_sweep(out_dir)
    a = analyse(data)
    written = []
    if charts:
        from sweeper.report.charts import write_charts

        written = write_charts(a, out_dir / CHARTS_DIR)
    (out_dir / MODELS_FILE).unlink(missing_ok=True)
    report = out_dir / REPORT_FILE
    report.write_text(markdown.render(a, charts=written), encoding="utf-8")
    write_page(a, out_dir, charts=written)
    text = json.dumps(summary(a), indent=2, sort_keys=True, ensure_ascii=False, default=str)
    (out_dir / SUMMARY_FILE).write_text(text + "\n", encoding="utf-8")
    write_parquet(data, out_dir / PARQUET_FILE)
    return report


def diff_command(old: Path, new: Path, *, fail_on_regression: bool) -> tuple[str, int]:
    """Compare two sweeps; write NEW/diff.md; return (Markdown, exit code). The exit code
    is 1 when ``fail_on_regression`` and any model or stage regressed, else 0."""
    from sweeper.report.diff import compare, render_diff

    old_data, new_data = read_sweep(Path(old)), read_sweep(Path(new))
    result = compare(old_data, new_data)
    text = render_diff(result, old_name=str(old), new_name=str(new))
    (Path(new) / DIFF_FILE).write_text(text, encoding="utf-8")
    return text, 1 if fail_on_regression and result.regressed_any else 0


def publish(out_dir: Path, to: str, *, compare: Path | None = None) -> str:
    """Publish a sweep: a self-contained folder, or ``hf://datasets/ORG/NAME`` on the Hub.
    ``compare``: another sweep's folder; the page then marks what each model fixed or
    regressed against it. Returns where it went."""
    from sweeper.report.publish import publish_folder, publish_hub

    if to.startswith("hf://"):
        return publish_hub(Path(out_dir), to, compare=compare)
    return publish_folder(Path(out_dir), Path(to), compare=compare)
