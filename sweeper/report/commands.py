"""What the CLI calls: ``sweep report`` and ``sweep diff`` (``sweep publish``, which
builds on ``write_report``, is ``sweeper.report.publish.publish``)."""

from __future__ import annotations

import json
from pathlib import Path

from sweeper.report.analysis import analyse, summary
from sweeper.report.load import gc_paused, read_sweep
from sweeper.storage import folder as names
from sweeper.storage.folder import SweepFolder


def write_report(out_dir: Path, *, charts: bool = True) -> Path:
    """Build report.md, index.html, summary.json, records.parquet and charts/*.png in
    ``out_dir`` from its records; return the path of report.md. Raises ``UsageError`` on bad input."""
    with gc_paused():  # the frames and lists of a large sweep live until the end
        return _write_report(Path(out_dir), charts=charts)


def _write_report(out_dir: Path, *, charts: bool) -> Path:
    import tempfile

    from sweeper.report import document
    from sweeper.report.export import write_parquet
    from sweeper.report.page import write_page
    from sweeper.storage.staged import Staged

    data = read_sweep(out_dir)
    a = analyse(data)
    # Every output is staged and renamed together: a failure leaves the old set intact.
    with Staged(out_dir) as staged:
        written = []
        if charts:
            from sweeper.report.charts import write_charts

            written = write_charts(a, staged.folder_path(names.CHARTS))
        staged.remove(names.MODELS)
        staged.text(names.REPORT, document.render(a, charts=written))
        with tempfile.TemporaryDirectory(prefix=".page-", dir=out_dir) as page_dir:
            staged.copy(write_page(a, Path(page_dir), charts=written), names.PAGE)
        text = json.dumps(summary(a), indent=2, sort_keys=True, ensure_ascii=False, default=str)
        staged.text(names.SUMMARY, text + "\n")
        write_parquet(data, staged.path(names.PARQUET))
    return SweepFolder(out_dir).report


def diff_command(old: Path, new: Path, *, fail_on_regression: bool) -> tuple[str, int]:
    """Compare two sweeps; write NEW/diff.md; return (Markdown, exit code). The exit code
    is 1 when ``fail_on_regression`` and any model or stage regressed, else 0."""
    from sweeper.report.diff import compare, render_diff

    old_data, new_data = read_sweep(Path(old)), read_sweep(Path(new))
    result = compare(old_data, new_data, folders=(Path(old), Path(new)))
    text = render_diff(result, old_name=str(old), new_name=str(new))
    SweepFolder(new).diff.write_text(text, encoding="utf-8")
    return text, 1 if fail_on_regression and result.regressed_any else 0
