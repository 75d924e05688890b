"""index.html leads with "Fix next" (the report's plan of root causes, in plan order), its
plan chart draws the same steps, it links to history.html when the folder has one, and
``sweep publish`` carries the detail pages, the history and the reproducers with it."""

from __future__ import annotations

import dataclasses
import json
import shutil
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import matplotlib.pyplot as plt
import pytest
from page_browser import page_ready
from report_factory import meta, reason, record, write_sweep

from sweeper.records import Origin
from sweeper.report import charts
from sweeper.report.analysis import analyse
from sweeper.report.commands import write_history, write_report
from sweeper.report.load import read_sweep
from sweeper.report.lowering_plan import plan
from sweeper.report.publish import publish

HOSTILE_ID = "org/<img src=x onerror=window.__pwned=1>"
HOSTILE_OP = "aten::<b onmouseover=alert(2)>x</b>"  # no ".": an overload would be cut off
GRAPH_REPRO = "repros/graph-0123abcd.py"  # the whole-graph failure of ``plan_records`` names it


def records() -> list:
    """Device ops, a pair of ops that free a model only together, a whole graph the lowering
    tool fails on (with its reproducer), a model no fix frees, and an op whose name is markup.

    The plan's order (downloads freed per fix): upsample 3,000; histc 1,500; cummax with
    cummin 2,400 for two fixes; the graph 800; the markup op 650. Ops by downloads blocked
    would put histc first (it blocks the numerics model too)."""
    graph = dataclasses.replace(
        reason("lowering_tool_error", None, f"backward graph: failed without naming an op\nreproducer: /x/out/{GRAPH_REPRO}"),
        origin=Origin.LOWERING_TOOL, stage="compile")
    return [
        record("org/pass", 1, 10000),
        record("org/up", 2, 3000, "fail", fail_at="forward", blockers=[reason("unsupported_op", "aten::upsample_bilinear2d.vec")]),
        record("org/cum", 3, 2400, "fail", fail_at="forward",
               blockers=[reason("unsupported_op", "aten::cummax"), reason("unsupported_op", "aten::cummin")]),
        record("org/graph", 4, 800, "fail", fail_at="compile", blockers=[graph]),
        record("org/histc", 5, 1500, "fail", fail_at="forward", blockers=[reason("unsupported_op", "aten::histc")]),
        record(HOSTILE_ID, 6, 650, "fail", fail_at="forward",
               blockers=[reason("unsupported_op", HOSTILE_OP, "</script><script>x</script>")]),
        record("org/numerics", 7, 5000, "fail", fail_at="forward",
               blockers=[reason("unsupported_op", "aten::histc"), reason("numerics")]),
    ]  # fmt: skip


class Steps(HTMLParser):
    """The rows of the Fix next table: each cell's text pieces and link targets; and the
    ids and <h2> headings of the page in document order."""

    def __init__(self) -> None:
        super().__init__()
        self.rows: list[list[dict[str, list[str]]]] = []
        self.heads: list[str] = []
        self.ids: list[str] = []
        self.h2: list[str] = []
        self._in_table = self._in_h2 = False
        self._cell: dict[str, list[str]] | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = dict(attrs)
        if a.get("id"):
            self.ids.append(a["id"] or "")
        if tag == "table" and a.get("id") == "fix-next-steps":
            self._in_table = True
        elif self._in_table and tag == "tr":
            self.rows.append([])
        elif self._in_table and tag in ("td", "th"):
            self._cell = {"text": [], "href": []}
            (self.rows[-1] if tag == "td" else self.heads).append(self._cell)  # type: ignore[arg-type]
        elif self._cell is not None and tag == "a":
            self._cell["href"].append(a.get("href") or "")
        elif tag == "h2":
            self._in_h2 = True
            self.h2.append("")

    def handle_endtag(self, tag: str) -> None:
        if tag == "table":
            self._in_table = False
        elif tag in ("td", "th"):
            self._cell = None
        elif tag == "h2":
            self._in_h2 = False

    def handle_data(self, data: str) -> None:
        if self._cell is not None and data.strip():
            self._cell["text"].append(data.strip())
        if self._in_h2:
            self.h2[-1] += data


def parsed(page: str) -> Steps:
    p = Steps()
    p.feed(page)
    p.rows = [r for r in p.rows if r]  # the heading row holds <th> cells only
    return p


def report_of(tmp_path: Path, recs: list, **kw: Any) -> Path:
    out = write_sweep(tmp_path / "out", recs, **kw)
    write_report(out, charts=False)
    return out


def test_page_leads_with_the_plan_in_plan_order(tmp_path: Path) -> None:
    out = report_of(tmp_path, records())
    page = (out / "index.html").read_text(encoding="utf-8")
    p = parsed(page)
    assert p.h2[0] == "Fix next"  # before the figures, the charts and the model table
    assert p.ids.index("fix-next") < min(p.ids.index(i) for i in ("header", "headline", "charts-box", "models", "roadmap"))
    heads = [" ".join(c["text"]) for c in p.heads]
    assert heads == ["k", "fix", "whose", "models freed", "downloads freed", "coverage after", "reproducer"]

    steps = plan(read_sweep(out))["steps"]
    assert [r[0]["text"] for r in p.rows] == [[str(s["step"])] for s in steps] == [["1"], ["2"], ["3"], ["4"], ["5"]]
    shown = [[t for t in r[1]["text"] if t != "together:"] for r in p.rows]
    assert shown == [[c.text() for c in s["causes"]] for s in steps]  # the causes in words, in plan order
    assert shown[:3] == [["lower aten::upsample_bilinear2d (+ backward)"], ["lower aten::histc (+ backward)"],
                         ["lower aten::cummax (+ backward)", "lower aten::cummin (+ backward)"]]
    assert p.rows[2][1]["text"][0] == "together:"  # a bundle's causes are fixed together
    assert [[c["text"] for c in r[2:6]] for r in p.rows[:3]] == [
        [["device"], ["1"], ["3.0k"], ["55.7%"]],  # 10,000 of 23,350 downloads pass, then 13,000
        [["device"], ["1"], ["1.5k"], ["62.1%"]],
        [["device"], ["1"], ["2.4k"], ["72.4%"]]]  # fmt: skip
    graph = p.rows[3]
    assert graph[2]["text"] == ["lowering tool"] and graph[6]["href"] == [GRAPH_REPRO]  # relative to the folder
    assert all(r[6]["text"] == ["—"] for r in p.rows if r is not graph)


def test_fix_next_escapes_what_records_say(tmp_path: Path) -> None:
    out = report_of(tmp_path, records())
    page = (out / "index.html").read_text(encoding="utf-8")
    row = next(r for r in parsed(page).rows if HOSTILE_OP in " ".join(r[1]["text"]))
    assert row[1]["text"] == [f"lower {HOSTILE_OP} (+ backward)"]  # shown as text
    assert "<b onmouseover" not in page and "<img src=x" not in page  # never as markup, in HTML or the data
    assert "lower aten::&lt;b onmouseover=alert(2)&gt;x&lt;/b&gt; (+ backward)" in page
    assert page.count("<script") == 2 and page.count("</script>") == 2


def test_the_op_ranking_says_it_is_not_the_fix_order(tmp_path: Path) -> None:
    page = (report_of(tmp_path, records()) / "index.html").read_text(encoding="utf-8")
    assert "Op-lowering roadmap" not in page
    assert "Ops by downloads blocked (not the fix order: see Fix next)" in parsed(page).h2


def test_without_downloads_the_plan_counts_models(tmp_path: Path) -> None:
    recs = [record("m1", 1, None), record("m2", 2, None, "fail", fail_at="forward",
                                          blockers=[reason("unsupported_op", "aten::histc")])]
    out = report_of(tmp_path, recs, sweep=meta(source={"name": "zoo"}))
    p = parsed((out / "index.html").read_text(encoding="utf-8"))
    assert [" ".join(c["text"]) for c in p.heads] == ["k", "fix", "whose", "models freed", "coverage after", "reproducer"]
    assert [[c["text"] for c in r[:5]] for r in p.rows] == [
        [["1"], ["lower aten::histc (+ backward)"], ["device"], ["1"], ["100.0%"]]]


def test_nothing_to_fix_says_so(tmp_path: Path) -> None:
    recs = [record("m1", 1, 10), record("m2", 2, 5, "fail", fail_at="forward", blockers=[reason("numerics")])]
    page = (report_of(tmp_path, recs) / "index.html").read_text(encoding="utf-8")
    assert parsed(page).h2[0] == "Fix next" and not parsed(page).rows
    assert "No fix of a root cause would make another model pass. Today 66.7% of the PyTorch-format downloads" in page


def test_plan_chart_draws_the_steps_in_plan_order(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    out = write_sweep(tmp_path / "out", records())
    a = analyse(read_sweep(out), folder=out)
    drawn: dict[str, Any] = {}
    close = plt.close

    def keep(fig: Any) -> None:  # read each figure before write_charts closes it
        ax = fig.axes[0]
        drawn[ax.get_title()] = ([t.get_text() for t in ax.get_yticklabels()], [b.get_width() for b in ax.patches])
        close(fig)

    monkeypatch.setattr(plt, "close", keep)
    written = charts.write_charts(a, tmp_path / "charts")
    assert "top_blockers.png" in written
    labels, widths = drawn["Fix next: downloads freed per step"]
    assert widths == [float(s["weight_freed"]) for s in a.plan["steps"]] == [3000, 1500, 2400, 800, 650]  # plan order
    assert labels[:2] == ["1. lower aten::upsample_bilinear2d (+ backward)", "2. lower aten::histc (+ backward)"]
    assert labels[2].startswith("3. lower aten::cummax (+ backward) + lower aten::cummin") and labels[2].endswith("…")
    assert all(len(label) <= charts.LABEL_CHARS for label in labels)


def test_page_caption_names_the_plan_chart(tmp_path: Path) -> None:
    out = write_sweep(tmp_path / "out", records())
    write_report(out)
    page = (out / "index.html").read_text(encoding="utf-8")
    data = json.loads(page.split('id="sweep-data">', 1)[1].split("</script>", 1)[0])
    assert ["top_blockers.png", "Fix next: downloads freed per step"] in data["charts"]


def test_page_links_history_when_the_folder_has_one(tmp_path: Path) -> None:
    out = report_of(tmp_path, records())
    assert 'href="history.html"' not in (out / "index.html").read_text(encoding="utf-8")
    write_history([out])  # history.md, history.html, history.json, history-charts/ beside index.html
    write_report(out, charts=False)
    page = (out / "index.html").read_text(encoding="utf-8")
    assert '<a id="history-link" href="history.html">sweep history</a>' in page
    assert parsed(page).ids.index("history") < parsed(page).ids.index("header")


def test_publish_carries_details_history_and_reproducers(tmp_path: Path) -> None:
    out = write_sweep(tmp_path / "out", records())
    repros = out / "repros"
    repros.mkdir()
    (repros / "graph-0123abcd.py").write_text("raise SystemExit(1)\n")
    (repros / "graph-0123abcd.json").write_text('{"script": "graph-0123abcd.py", "exit": 1}\n')
    write_history([out])
    site = Path(publish(out, str(tmp_path / "site")))
    names = {p.relative_to(site).as_posix() for p in site.rglob("*") if p.is_file()}
    assert {"details/plan.md", "details/lowering-tool.md", "history.md", "history.html", "history.json",
            "repros/graph-0123abcd.py", "repros/graph-0123abcd.json"} <= names
    assert any(n.startswith("history-charts/") and n.endswith(".png") for n in names)
    assert (site / "repros" / "graph-0123abcd.json").read_text() == '{"script": "graph-0123abcd.py", "exit": 1}\n'
    # What the published page and report link to is there.
    page = (site / "index.html").read_text(encoding="utf-8")
    assert 'href="history.html"' in page and f'href="{GRAPH_REPRO}"' in page and 'href="details/plan.md"' in page
    assert "](details/plan.md)" in (site / "report.md").read_text(encoding="utf-8")

    # Published again without history: none of it stays behind in the site.
    for name in ("history.md", "history.html", "history.json"):
        (out / name).unlink()
    shutil.rmtree(out / "history-charts")
    publish(out, str(site))
    names = {p.relative_to(site).as_posix() for p in site.rglob("*")}
    assert not any(n.startswith("history") for n in names)
    assert 'href="history.html"' not in (site / "index.html").read_text(encoding="utf-8")


def test_a_user_reads_fix_next_first_in_the_browser(browser: Any, tmp_path: Path) -> None:
    out = write_sweep(tmp_path / "out", records())
    site = Path(publish(out, str(tmp_path / "site")))
    page_ready(browser, (site / "index.html").as_uri())
    first = browser.execute_script("return document.querySelector('h2').textContent")
    assert first == "Fix next"
    rows = browser.execute_script(
        "return [...document.querySelectorAll('#fix-next-steps tbody tr')].map(r => r.cells[1].innerText)")
    assert rows[:2] == ["lower aten::upsample_bilinear2d (+ backward)", "lower aten::histc (+ backward)"]
    assert rows[2].splitlines() == ["together:", "lower aten::cummax (+ backward)", "lower aten::cummin (+ backward)"]
    assert f"lower {HOSTILE_OP} (+ backward)" in rows
    assert browser.execute_script("return typeof window.__pwned") == "undefined"
    assert browser.execute_script("return document.querySelectorAll('#fix-next b, #fix-next img').length") == 0
    link = browser.find_element("css selector", f'#fix-next a[href="{GRAPH_REPRO}"]')
    assert link.get_attribute("href") == (site / GRAPH_REPRO).as_uri()
