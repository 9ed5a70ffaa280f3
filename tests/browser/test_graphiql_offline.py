"""GraphiQL in a real browser with no internet: the page, a query with a pasted bearer token, a live feed.

Chromium (Debian's, driven by chromedriver through Selenium) resolves no host but 127.0.0.1, so any asset
still fetched from a CDN would leave the page blank.
"""

from __future__ import annotations

import json
import uuid

from selenium import webdriver
from selenium.common.exceptions import TimeoutException
from selenium.webdriver.common.by import By
from selenium.webdriver.remote.webdriver import WebDriver
from selenium.webdriver.support.ui import WebDriverWait

from harness.chain_support import create_short_task
from harness.proofloop import ApiClient, ServerProcess, WorkerProcess
from tests.support.graphiql import SET_EDITOR, browser, open_graphiql, pytestmark

__all__ = ["browser", "pytestmark"]


def paste_headers(browser: WebDriver, headers: dict[str, str]) -> None:
    tab = next(
        b
        for b in browser.find_elements(By.CSS_SELECTOR, ".graphiql-editor-tools button")
        if b.text == "Headers"
    )
    tab.click()
    editor = WebDriverWait(browser, 10).until(
        lambda d: d.find_element(
            By.CSS_SELECTOR, ".graphiql-editor-tool .graphiql-editor:not(.hidden) .CodeMirror"
        )
    )
    browser.execute_script(SET_EDITOR, editor, json.dumps(headers))


def run_document(browser: WebDriver, document: str) -> None:
    editor = browser.find_element(By.CSS_SELECTOR, ".graphiql-query-editor .CodeMirror")
    browser.execute_script(SET_EDITOR, editor, document)
    # GraphiQL takes an edit in after a debounce; the page mirrors it into ?query= once it has
    WebDriverWait(browser, 10).until(
        lambda d: d.execute_script("return new URLSearchParams(location.search).get('query')") == document
    )
    browser.find_element(By.CSS_SELECTOR, ".graphiql-execute-button").click()


def wait_for_response(browser: WebDriver, *texts: str, timeout: float = 30) -> None:
    def response(d: WebDriver) -> str:
        text: str = d.find_element(By.CSS_SELECTOR, ".graphiql-response").text
        return text

    try:
        WebDriverWait(browser, timeout).until(lambda d: all(t in response(d) for t in texts))
    except TimeoutException:
        raise AssertionError(f"GraphiQL never showed {texts}; it shows:\n{response(browser)}") from None


async def test_graphiql_queries_and_subscribes_offline(
    browser: webdriver.Chrome, server: ServerProcess, worker: WorkerProcess, api: ApiClient
) -> None:
    name = f"browser-{uuid.uuid4().hex[:8]}"
    token, _ = await api.register(name)

    open_graphiql(browser, server)
    loaded = browser.execute_script("return performance.getEntriesByType('resource').map(e => e.name)")
    assert loaded, "the page loaded no assets"
    assert all(url.startswith(server.url) for url in loaded), loaded

    paste_headers(browser, {"Authorization": f"Bearer {token}"})
    run_document(browser, "{ me { displayName } }")
    wait_for_response(browser, name)

    title = f"Browser feed {uuid.uuid4().hex[:6]}"
    run_document(browser, "subscription { verificationEvents { type taskTitle } }")
    # the socket is authenticated by the same headers, sent as connection_init's payload
    await create_short_task(api, token, title=title)
    wait_for_response(browser, title, "MISSED")
    # everything above ran under the page's Content-Security-Policy, which refused nothing it needs
    log: list[dict[str, str]] = browser.get_log("browser")  # type: ignore[no-untyped-call]  # untyped in selenium
    console = [entry["message"] for entry in log]
    assert not [m for m in console if "Content Security Policy" in m], console
