"""GraphiQL in headless Chromium: the browser (skipped without Debian's chromium and chromium-driver), opening
the page, setting an editor."""

from __future__ import annotations

import shutil
from collections.abc import Iterator

import pytest
from selenium import webdriver
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.remote.webdriver import WebDriver
from selenium.webdriver.support.ui import WebDriverWait

from harness.proofloop import ServerProcess

CHROMIUM = shutil.which("chromium")


CHROMEDRIVER = shutil.which("chromedriver")


CHROMIUM_FLAGS = [
    "--headless=new",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-dev-shm-usage",
    "--no-first-run",
    "--window-size=1400,900",
    # the network is closed: only the API on the loopback resolves
    "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1",
]


pytestmark = pytest.mark.skipif(
    CHROMIUM is None or CHROMEDRIVER is None,
    reason="needs Debian's chromium and chromium-driver (apt-get install chromium chromium-driver; CI does)",
)


# GraphiQL's editors are CodeMirror 5 instances; setValue goes through the same change events as typing
SET_EDITOR = "arguments[0].CodeMirror.setValue(arguments[1]);"


@pytest.fixture(scope="module")
def browser() -> Iterator[webdriver.Chrome]:
    options = webdriver.ChromeOptions()
    assert CHROMIUM is not None and CHROMEDRIVER is not None
    options.binary_location = CHROMIUM
    for flag in CHROMIUM_FLAGS:
        options.add_argument(flag)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})  # CSP violations land in the console
    driver = webdriver.Chrome(service=Service(CHROMEDRIVER), options=options)
    try:
        yield driver
    finally:
        driver.quit()


def open_graphiql(browser: WebDriver, server: ServerProcess) -> None:
    browser.get(f"{server.url}/graphql")
    WebDriverWait(browser, 30).until(
        lambda d: d.find_elements(By.CSS_SELECTOR, ".graphiql-query-editor .CodeMirror")
    )
