"""Time index.html with a large synthetic sweep in headless Chromium.

The records are report_scale's (shaped like the 2022 Hub listing); ``sweep publish`` writes
the page, then Chromium opens it from disk. Figures come from performance.now() in the page:
time to first render (navigation start to the first rows drawn, parsing the data included)
and time to filter (from the search input's event to the filtered rows drawn, sorting and
counting included), the median over a few searches and filter changes.

    python benchmarks/page_scale.py [--records 100000] [--loads 3]

The last line reads ``page_scale rows=N first_render_ms=X filter_ms=Y``.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent / "tests" / "report"))

from page_browser import BrowserMissing, page_ready, start_chromium  # noqa: E402
from report_scale import CATALOG, generate  # noqa: E402

# (what, JavaScript that changes one control and fires its event)
ACTIONS = [
    ("search bert", "const e=document.getElementById('search'); e.value='bert'; e.dispatchEvent(new Event('input'));"),
    ("search aten::nonzero", "const e=document.getElementById('search'); e.value='aten::nonzero'; e.dispatchEvent(new Event('input'));"),
    ("clear search", "const e=document.getElementById('search'); e.value=''; e.dispatchEvent(new Event('input'));"),
    ("status fail", "const e=document.getElementById('f-status'); e.value='fail'; e.dispatchEvent(new Event('change'));"),
    ("origin device", "const e=document.getElementById('f-origin'); e.value='device'; e.dispatchEvent(new Event('change'));"),
    ("status any", "const e=document.getElementById('f-status'); e.value=''; e.dispatchEvent(new Event('change'));"),
]


def measure(site: Path, loads: int, profile: Path) -> tuple[list[float], list[float], int]:
    """First-render times per load and filter times per action; the models the page holds
    (a few fewer than records: ids the listing repeats share one key)."""
    driver = start_chromium(profile)
    first, filters = [], []
    try:
        for _ in range(loads):
            page_ready(driver, (site / "index.html").as_uri(), timeout=300)
            first.append(driver.execute_script("return window.__pageTimes.firstRender"))
            for what, script in ACTIONS:
                driver.execute_script(script)
                ms = driver.execute_script("return window.__pageTimes.lastFilterMs")
                shown = driver.find_element("id", "count").text
                print(f"  {what}: {ms:.0f} ms ({shown})")
                filters.append(ms)
        rows = driver.execute_script("return window.__sweepPage.total")
        in_dom = driver.execute_script("return document.querySelectorAll('#spacer .row').length")
        print(f"  rows in the DOM: {in_dom}")
    finally:
        driver.quit()
    return first, filters, rows


def main() -> None:
    """Generate, publish, open in Chromium; print the figures."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=100_000)
    parser.add_argument("--loads", type=int, default=3)
    parser.add_argument("--catalog", type=Path, default=CATALOG)
    args = parser.parse_args()
    if not args.catalog.exists():
        sys.exit(f"page_scale: catalog not found at {args.catalog} (clone with ../shared beside it)")
    from sweeper.report.publish import publish

    with tempfile.TemporaryDirectory() as tmp:
        out, site = Path(tmp) / "sweep", Path(tmp) / "site"
        generate(out, args.records, args.catalog)
        started = time.perf_counter()
        publish(out, str(site))
        size = (site / "index.html").stat().st_size / 2**20
        print(f"publish {time.perf_counter() - started:.1f} s; index.html {size:.1f} MiB")
        try:
            first, filters, rows = measure(site, args.loads, Path(tmp) / "profile")
        except BrowserMissing as exc:
            sys.exit(f"page_scale: {exc}")
    print(f"first render per load (ms): {', '.join(f'{v:.0f}' for v in first)}; "
          f"filter range {min(filters):.0f}-{max(filters):.0f} ms")  # fmt: skip
    print(f"page_scale rows={rows} first_render_ms={statistics.median(first):.0f} filter_ms={statistics.median(filters):.0f}")


if __name__ == "__main__":
    main()
