"""What the CLI calls: ``sweep report`` and ``sweep diff`` (``sweep publish``, which
builds on ``write_report``, is ``sweeper.report.publish.publish``)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from sweeper.report.analysis import analyse, summary
from sweeper.report.load import gc_paused, read_sweep
from sweeper.storage import folder as names
from sweeper.storage.folder import SweepFolder


def write_report(out_dir: Path, *, charts: bool = True, against: Path | None = None) -> Path:
    """Build report.md, details/*.md, index.html, summary.json, records.parquet and
    charts/*.png in ``out_dir`` from its records (``against``: another dtype's sweep of the
    same catalog to compare with); return the path of report.md. Raises ``UsageError`` on bad input."""
    with gc_paused():  # the frames and lists of a large sweep live until the end
        return _write_report(Path(out_dir), charts=charts, against=against)


def _write_report(out_dir: Path, *, charts: bool, against: Path | None = None) -> Path:
    import tempfile

    from sweeper.report import against as versus
    from sweeper.report import document
    from sweeper.report.export import write_parquet
    from sweeper.report.page import write_page
    from sweeper.report.pages import write_pages
    from sweeper.storage.staged import Staged

    data = read_sweep(out_dir)
    a = analyse(data, folder=out_dir)
    if against is not None:
        a.against = versus.render(data, read_sweep(Path(against)), link=document.links_to_hub(a))
    # Every output is staged and renamed together: a failure leaves the old set intact.
    with Staged(out_dir) as staged:
        written = []
        if charts:
            from sweeper.report.charts import write_charts

            written = write_charts(a, staged.folder_path(names.CHARTS))
        staged.remove(names.MODELS)
        write_pages(a, staged.folder_path(names.DETAILS), link=document.links_to_hub(a))
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


def write_history(runs: list[Path], out: Path | None = None) -> Path:
    """Build history.md, history.html, history.json and history-charts/*.png from sweep
    folders (oldest first, or one folder of dated sweep folders) into ``out`` (default:
    the newest night's folder, beside its index.html); return the path of history.md."""
    from sweeper.report.history import build_history
    from sweeper.report.history_charts import write_history_charts
    from sweeper.report.history_doc import render
    from sweeper.report.history_page import render_history_page
    from sweeper.report.history_runs import read_nights
    from sweeper.storage.staged import Staged

    with gc_paused():
        nights = read_nights(runs)
        h = build_history(nights)
    target = Path(out) if out is not None else nights[-1].path
    target.mkdir(parents=True, exist_ok=True)
    with Staged(target) as staged:
        charts = write_history_charts(h, staged.folder_path(names.HISTORY_CHARTS))
        paths = {role: f"{names.HISTORY_CHARTS}/{name}" for role, name in charts.items()}
        staged.text(names.HISTORY, render(h, charts=paths))
        lookup = _relative(nights[-1].path / names.PAGE, target)
        staged.text(names.HISTORY_PAGE, render_history_page(h, charts=paths, lookup=lookup))
        staged.text(names.HISTORY_JSON, json.dumps(history_summary(h), indent=2, sort_keys=True, default=str) + "\n")
    return target / names.HISTORY


def history_summary(h: Any) -> dict[str, Any]:
    """history.json: the nights' figures, the items' blocked weight and the flips, as data."""
    from sweeper.report.history_flaky import flake_rates

    return {
        "common_models": len(h.common),
        "weighted": h.weighted,
        "nights": h.figures.to_dict(orient="records"),
        "plan_items": h.items.drop(columns=["label"]).to_dict(orient="records"),
        "blockers": h.blockers.to_dict(orient="records"),
        "same_check_flips": h.flips.to_dict(orient="records"),
        "rechecks": flake_rates(h.rechecks, h.labels).to_dict(orient="records"),
    }


def _relative(page: Path, folder: Path) -> str | None:
    """``page`` relative to ``folder`` when it exists (None when it does not)."""
    import os

    if not page.is_file():
        return None
    return os.path.relpath(page.resolve(), folder.resolve())


def expect_command(run: Path, write: Path | None) -> str:
    """``sweep expect RUN [--write CSV]``: the sweep's expected-results CSV (written when asked)."""
    from sweeper.report.expected import write_expected

    return write_expected(read_sweep(Path(run)), write)


def expected_command(run: Path, expected: Path) -> tuple[str, int]:
    """``sweep diff --expected CSV RUN``: (what to print, exit code: 1 when a model is worse)."""
    from sweeper.report.expected import judge, read_expected, render_judgement

    want = read_expected(expected)
    return render_judgement(judge(read_sweep(Path(run)), want), expected_path=str(expected))
