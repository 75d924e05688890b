"""index.html: a self-contained, searchable page of a sweep (no server, no network).

The page is one HTML file: its CSS and JavaScript are inlined, the charts are the PNGs
beside it, and the data is a JSON blob in a ``<script type="application/json">`` element.
The script renders every value from records with ``textContent``, never as markup.
"""

from __future__ import annotations

import html
import json
from importlib import resources
from pathlib import Path
from typing import Any

from sweeper.report.analysis import Analysis
from sweeper.report.escape import hub_url
from sweeper.report.page_data import page_data
from sweeper.storage.folder import SweepFolder

# Inside a JSON string these stand for themselves; escaped, no "</script>" or "<!--" can
# end the data element early, whatever a model id or message holds.
_JSON_ESCAPES = {"<": "\\u003c", ">": "\\u003e", "&": "\\u0026", "\u2028": "\\u2028", "\u2029": "\\u2029"}


def script_json(data: Any) -> str:
    """JSON safe to place inside a ``<script type="application/json">`` element."""
    text = json.dumps(data, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    for char, escaped in _JSON_ESCAPES.items():  # str.replace runs in C: fast on megabytes
        text = text.replace(char, escaped)
    return text


def _asset(name: str) -> str:
    return resources.files("sweeper.report").joinpath("page_assets", name).read_text(encoding="utf-8")


def render_page(data: dict[str, Any]) -> str:
    """The whole index.html text for ``page_data`` output."""
    title = html.escape(data["title"])
    return (
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
        '<meta name="viewport" content="width=device-width, initial-scale=1">\n'
        # No network at all: the page needs nothing but itself and the charts beside it.
        "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; img-src 'self' data:; "
        "style-src 'unsafe-inline'; script-src 'unsafe-inline'\">\n"
        f"<title>{title}</title>\n<style>\n{_asset('page.css')}</style>\n</head>\n<body>\n"
        f"{_asset('page.html')}"
        f'<script type="application/json" id="sweep-data">{script_json(data)}</script>\n'
        f"<script>\n{_asset('page.js')}</script>\n</body>\n</html>\n"
    )


def write_page(
    a: Analysis, folder: Path, *, charts: list[str], compare: Any = None, compare_name: str = ""
) -> Path:
    """Write ``folder/index.html`` for one analysed sweep; return its path."""
    from sweeper.report.document import links_to_hub

    hub = hub_url() if links_to_hub(a) else None
    data = page_data(a, charts=charts, hub=hub, compare=compare, compare_name=compare_name)
    path = SweepFolder(folder).page
    path.write_text(render_page(data), encoding="utf-8")
    return path
