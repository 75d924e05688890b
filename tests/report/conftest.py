"""Fixtures shared by the report tests."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from page_browser import BrowserMissing, start_chromium


@pytest.fixture(scope="module")
def browser(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """One headless Chromium per test module; skipped where none can be found."""
    try:
        driver = start_chromium(tmp_path_factory.mktemp("chromium-profile"))
    except BrowserMissing as exc:
        pytest.skip(f"no headless browser: {exc}")
    yield driver
    driver.quit()
