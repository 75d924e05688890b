"""index.html driven in headless Chromium: search, filters, the roadmap's op links, the
detail panel, --compare, hostile records shown as text, and a screenshot."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from page_browser import page_ready
from report_factory import reason, record, write_sweep
from test_report_markdown import sweep_records

from sweeper.report.escape import hub_url
from sweeper.report.publish import publish

HOSTILE_ID = "<img src=x onerror=window.__pwned=1>"
HOSTILE_MESSAGE = "</script><script>window.__pwned=2</script><b onmouseover=window.__pwned=3>x</b>"


def page_records() -> list:
    """The report tests' sweep plus a model whose id and message are markup."""
    return [
        *sweep_records(),
        record(HOSTILE_ID, 10, 50, "fail", fail_at="forward", model_type="<i>t</i>",
               blockers=[reason("unsupported_op", "aten::</script>", HOSTILE_MESSAGE)]),
    ]  # fmt: skip


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A published folder of ``page_records``."""
    tmp = tmp_path_factory.mktemp("page")
    out = write_sweep(tmp / "out", page_records())
    return Path(publish(out, str(tmp / "site")))


def opened(browser: Any, site: Path) -> Any:
    page_ready(browser, (site / "index.html").as_uri())
    return browser


def visible(browser: Any) -> list[str]:
    return browser.execute_script("return window.__sweepPage.visibleIds()")


def count(browser: Any) -> str:
    return browser.find_element("id", "count").text


def type_search(browser: Any, text: str) -> None:
    box = browser.find_element("id", "search")
    box.clear()
    box.send_keys(text)


def choose(browser: Any, select_id: str, value: str) -> None:
    from selenium.webdriver.support.ui import Select

    Select(browser.find_element("id", select_id)).select_by_value(value)


def test_search_finds_a_model_by_id_model_type_or_op(browser: Any, site: Path) -> None:
    opened(browser, site)
    assert count(browser) == "10 of 10 models"
    type_search(browser, "UP-LSTM")
    assert visible(browser) == ["org/up-lstm"]
    assert count(browser) == "1 of 10 models"
    rows = browser.find_elements("css selector", "#spacer .row:not([hidden])")
    assert len(rows) == 1 and "org/up-lstm" in rows[0].text
    type_search(browser, "fused_lstm")  # an op among the blockers
    assert visible(browser) == ["org/up-lstm", "org/lstm-dtype"]
    type_search(browser, "vit")  # a model type
    assert visible(browser) == ["org/up"]
    type_search(browser, "aten::nonzero")  # a CPU fallback op
    assert visible(browser) == ["org/pass-b"]


def test_filters_change_the_counts(browser: Any, site: Path) -> None:
    opened(browser, site)
    choose(browser, "f-status", "fail")
    assert count(browser) == "5 of 10 models"
    choose(browser, "f-stage", "4:f")  # compile fails
    assert visible(browser) == ["org/breaks"]
    choose(browser, "f-stage", "")
    choose(browser, "f-status", "")
    choose(browser, "f-origin", "environment")
    assert sorted(visible(browser)) == ["org/gated", "org/remote"]
    choose(browser, "f-origin", "")
    assert count(browser) == "10 of 10 models"


def test_sorting_by_downloads(browser: Any, site: Path) -> None:
    opened(browser, site)
    browser.find_element("css selector", '#thead [data-col="2"]').click()
    assert visible(browser)[:3] == ["org/gated", "org/pass-a", "org/up"]  # most downloaded first
    browser.find_element("css selector", '#thead [data-col="2"]').click()
    assert visible(browser)[0] == HOSTILE_ID  # fewest


def test_roadmap_op_links_filter_to_the_models_they_block(browser: Any, site: Path) -> None:
    from selenium.webdriver.support.ui import WebDriverWait

    opened(browser, site)
    links = browser.find_elements("css selector", "#roadmap a")
    assert [a.text for a in links][:2] == ["aten::upsample_bilinear2d", "aten::_thnn_fused_lstm_cell"]
    links[1].click()  # the filter follows the URL's #op=..., on the hashchange event
    WebDriverWait(browser, 10).until(lambda b: b.find_element("id", "op-chip").is_displayed())
    assert visible(browser) == ["org/up-lstm", "org/lstm-dtype"]
    assert browser.find_element("id", "op-chip-name").text == "aten::_thnn_fused_lstm_cell"
    browser.find_element("id", "op-clear").click()
    assert count(browser) == "10 of 10 models"


def test_clicking_a_model_shows_its_record_and_repro(browser: Any, site: Path) -> None:
    opened(browser, site)
    type_search(browser, "org/up-lstm")
    browser.find_element("css selector", "#spacer .row:not([hidden])").click()
    panel = browser.find_element("id", "detail")
    assert panel.is_displayed()
    assert browser.find_element("id", "detail-title").text == "org/up-lstm"
    assert browser.find_element("id", "detail-repro").text == "sweep one org/up-lstm --device trnsim --weights tiny"
    assert "unsupported_op aten::_thnn_fused_lstm_cell" in panel.text
    assert browser.find_element("id", "detail-link").get_attribute("href") == f"{hub_url()}/org/up-lstm"


def test_hostile_id_and_message_render_as_text(browser: Any, site: Path) -> None:
    opened(browser, site)
    type_search(browser, "onerror")
    assert visible(browser) == [HOSTILE_ID]
    row = browser.find_element("css selector", "#spacer .row:not([hidden])")
    assert HOSTILE_ID in row.text and "</script><script>" in row.text
    row.click()
    assert browser.find_element("id", "detail-title").text == HOSTILE_ID
    assert not browser.find_element("id", "detail-link").is_displayed()  # not a Hub id: no link
    assert browser.execute_script("return typeof window.__pwned") == "undefined"
    assert browser.execute_script("return document.querySelectorAll('[onerror], [onmouseover], #spacer i').length") == 0
    assert "<i>t</i>" in row.text  # the model type, as text
    assert browser.execute_script("return document.scripts.length") == 2  # the data and the page's own


def test_screenshot_is_a_png(browser: Any, site: Path, tmp_path: Path) -> None:
    opened(browser, site)
    charts = browser.execute_script("return [...document.querySelectorAll('#charts img')].map(i => i.complete && i.naturalWidth)")
    assert len(charts) == 3 and all(charts)  # the PNGs beside the page load from file://
    shot = tmp_path / "page.png"
    assert browser.save_screenshot(str(shot))
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and shot.stat().st_size > 10_000


def test_compare_marks_fixed_and_regressed_models(browser: Any, tmp_path: Path) -> None:
    before = [
        record("org/now-fixed", 1, 100, "fail", fail_at="forward", blockers=[reason("unsupported_op", "aten::x")]),
        record("org/now-broken", 2, 90),
        record("org/same", 3, 80),
    ]
    after = [
        record("org/now-fixed", 1, 100),
        record("org/now-broken", 2, 90, "fail", fail_at="backward", blockers=[reason("no_gradient")]),
        record("org/same", 3, 80),
        record("org/brand-new", 4, 70),
    ]
    old, new = write_sweep(tmp_path / "old", before), write_sweep(tmp_path / "new", after)
    site = Path(publish(new, str(tmp_path / "site"), compare=old))
    opened(browser, site)
    assert browser.find_element("id", "compare-box").is_displayed()
    choose(browser, "f-change", "regressed")
    assert visible(browser) == ["org/now-broken"]
    choose(browser, "f-change", "fixed")
    assert visible(browser) == ["org/now-fixed"]
    choose(browser, "f-change", "new")
    assert visible(browser) == ["org/brand-new"]


LONG_ID = "opensearch-project/opensearch-neural-sparse-encoding-doc-v2-distill"  # the longest of the top 1000


def test_every_header_and_a_long_model_id_are_readable_at_1400px(browser: Any, tmp_path: Path) -> None:
    """Published pages cut model ids off and clipped the rightmost column header."""
    out = write_sweep(tmp_path / "out", [*sweep_records(), record(LONG_ID, 11, 40, "fail", fail_at="forward")])
    site = Path(publish(out, str(tmp_path / "site")))
    browser.set_window_size(1400, 1000)
    opened(browser, site)
    clipped = browser.execute_script("""
        const table = document.getElementById('table').getBoundingClientRect();
        return [...document.querySelectorAll('#thead > div')].filter((c) => {
          const r = c.getBoundingClientRect();
          return c.scrollWidth > c.clientWidth + 1 || r.right > table.right + 0.5; }).map((c) => c.textContent);""")
    assert clipped == []
    type_search(browser, "sparse-encoding")
    cell = browser.find_element("css selector", "#spacer .row:not([hidden]) > div.id")
    shown = browser.execute_script("const c = arguments[0]; return [c.scrollWidth <= c.clientWidth + 1, "
                                   "c.scrollHeight <= c.clientHeight + 1, c.title]", cell)
    assert shown == [True, True, LONG_ID]
