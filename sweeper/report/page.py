"""index.html: a self-contained, searchable page of a sweep (no server, no network).

The page is one HTML file: its CSS and JavaScript are inlined, the charts are the PNGs
beside it, and the data is a JSON blob in a ``<script type="application/json">`` element.
The script renders every value from records with ``textContent``, never as markup.

The page leads with "Fix next", the report's plan of root causes in plan order; it is
written as HTML here (every value through ``html.escape``), so it reads without the script.
"""

from __future__ import annotations

import html
import json
from importlib import resources
from pathlib import Path
from typing import Any

from sweeper.report.analysis import Analysis
from sweeper.report.escape import compact, hub_url, num, pct
from sweeper.report.page_data import REPRO_PATH, page_data
from sweeper.storage.folder import HISTORY_PAGE, SweepFolder

FIX_NEXT_MARK = "<!-- fix next -->"  # where page.html takes the Fix next section
HISTORY_MARK = "<!-- history -->"  # and the link to history.html
PLAN_PAGE = "details/plan.md"  # every step with its models (written beside index.html by the report)

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
        f"{_body(data, title)}"
        f'<script type="application/json" id="sweep-data">{script_json(data)}</script>\n'
        f"<script>\n{_asset('page.js')}</script>\n</body>\n</html>\n"
    )


def _body(data: dict[str, Any], title: str) -> str:
    """page.html with the title, Fix next and the history link written in."""
    body = _asset("page.html").replace('<h1 id="title"></h1>', f'<h1 id="title">{title}</h1>', 1)
    body = body.replace(FIX_NEXT_MARK, fix_next_html(data), 1)
    return body.replace(HISTORY_MARK, history_html(data), 1)


def history_html(data: dict[str, Any]) -> str:
    """A line linking to history.html, when the folder holds one ('' otherwise)."""
    if not data.get("history"):
        return ""
    return (f'<p id="history" class="history">Coverage, blockers and flaky verdicts night by night: '
            f'<a id="history-link" href="{_e(data["history"])}">sweep history</a>.</p>')


def _e(value: Any) -> str:
    return html.escape("" if value is None else str(value))


def fix_next_html(data: dict[str, Any]) -> str:
    """The Fix next section: the plan's steps in plan order (k, the causes in words, whose,
    models and downloads freed, coverage after, reproducers)."""
    fix, parts = data["fix_next"], ['<section id="fix-next" class="fix-next">', "<h2>Fix next</h2>"]
    unit = "downloads" if fix["weighted"] else "models"
    today = f"Today {pct(fix['start'])} of the PyTorch-format {unit} run end to end."
    if not fix["steps"]:
        parts += [f"<p>No fix of a root cause would make another model pass. {_e(today)}</p>", "</section>"]
        return "\n".join(parts)
    parts.append(
        f"<p>Root causes in the order that makes the most {unit} pass, each step one fix (or causes that free models "
        f"only together). {_e(today)} Fixing every cause reaches at most {_e(pct(fix['ceiling']))} "
        f"({_e(num(fix['ceiling_models']))} more models). "
        f'Every step with the models of each cause: <a href="{PLAN_PAGE}">{PLAN_PAGE}</a>.</p>'
    )
    heads = [("k", "num"), ("fix", ""), ("whose", ""), ("models freed", "num")]
    heads += [("downloads freed", "num")] if fix["weighted"] else []
    heads += [("coverage after", "num"), ("reproducer", "")]
    parts.append('<div class="scroll"><table id="fix-next-steps" class="grid">')
    parts.append("<thead><tr>" + "".join(f'<th class="{c}">{_e(h)}</th>' if c else f"<th>{_e(h)}</th>" for h, c in heads)
                 + "</tr></thead><tbody>")
    for s in fix["steps"]:
        causes = s["causes"]
        what = "<br>".join(_e(c) for c in causes)
        if len(causes) > 1:
            what = "<i>together:</i><br>" + what
        links = ", ".join(f'<a href="{_e(r)}">{_e(r.rsplit("/", 1)[-1])}</a>' for r in s["repros"] if REPRO_PATH.match(r))
        cells = [f'<td class="num">{_e(s["k"])}</td>', f'<td class="cause">{what}</td>', f"<td>{_e(', '.join(s['whose']))}</td>",
                 f'<td class="num">{_e(num(s["models_freed"]))}</td>']
        if fix["weighted"]:
            cells.append(f'<td class="num">{_e(compact(s["weight_freed"]))}</td>')
        cells += [f'<td class="num">{_e(pct(s["coverage"]))}</td>', f"<td>{links or '—'}</td>"]
        parts.append("<tr>" + "".join(cells) + "</tr>")
    parts += ["</tbody></table></div>", "</section>"]
    return "\n".join(parts)


def history_link(a: Analysis, folder: Path) -> str | None:
    """``history.html`` when the sweep folder (else the folder the page goes to) holds one."""
    where = a.folder if a.folder is not None else folder
    return HISTORY_PAGE if (Path(where) / HISTORY_PAGE).is_file() else None


def write_page(
    a: Analysis, folder: Path, *, charts: list[str], compare: Any = None, compare_name: str = ""
) -> Path:
    """Write ``folder/index.html`` for one analysed sweep; return its path."""
    from sweeper.report.document import links_to_hub

    hub = hub_url() if links_to_hub(a) else None
    data = page_data(a, charts=charts, hub=hub, compare=compare, compare_name=compare_name,
                     history=history_link(a, folder))
    path = SweepFolder(folder).page
    path.write_text(render_page(data), encoding="utf-8")
    return path
