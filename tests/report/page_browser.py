"""Headless Chromium for page tests and the page benchmark (Selenium + Debian's chromedriver).

``start_chromium`` returns a driver, or raises ``BrowserMissing`` saying what is missing,
so that tests skip with that reason where no browser can be found.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Any

BROWSERS = ("chromium", "chromium-browser", "google-chrome", "chrome")
DRIVERS = ("chromedriver",)
FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--no-first-run",
    "--disable-dev-shm-usage",
    "--allow-file-access-from-files",
    "--window-size=1400,1000",
)


class BrowserMissing(RuntimeError):
    """No Chromium, chromedriver or Selenium here."""


def _which(names: tuple[str, ...], env: str) -> str | None:
    found = os.environ.get(env)
    if found:
        return found
    return next((p for p in map(shutil.which, names) if p), None)


def start_chromium(profile: Path) -> Any:
    """A headless Chromium driver with a fresh profile in ``profile``."""
    try:
        from selenium import webdriver
        from selenium.webdriver.chrome.service import Service
    except ImportError:
        raise BrowserMissing("selenium is not installed (pip install selenium)") from None
    browser = _which(BROWSERS, "SWEEPER_CHROMIUM")
    driver = _which(DRIVERS, "SWEEPER_CHROMEDRIVER")
    if not browser or not driver:
        raise BrowserMissing("Chromium or chromedriver not found (apt-get install chromium chromium-driver)")
    options = webdriver.ChromeOptions()
    options.binary_location = browser
    for flag in FLAGS:
        options.add_argument(flag)
    profile.mkdir(parents=True, exist_ok=True)
    options.add_argument(f"--user-data-dir={profile}")
    return webdriver.Chrome(service=Service(executable_path=driver), options=options)


def page_ready(driver: Any, url: str, timeout: float = 60.0) -> None:
    """Open ``url`` and wait until the page has rendered its table."""
    from selenium.webdriver.support.ui import WebDriverWait

    driver.get(url)
    WebDriverWait(driver, timeout).until(lambda d: d.execute_script("return !!(window.__pageTimes && window.__pageTimes.firstRender)"))
