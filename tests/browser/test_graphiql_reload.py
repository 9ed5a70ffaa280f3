"""GraphiQL survives a reload: the address bar carries the query (never a mutation), and GET /graphql with
`Accept: text/html` serves GraphiQL prefilled from it instead of executing it. The Explorer is open."""

from __future__ import annotations

import uuid

from selenium.webdriver.common.by import By
from selenium.webdriver.remote.webdriver import WebDriver
from selenium.webdriver.support.ui import WebDriverWait

from harness.proofloop import ServerProcess
from tests.support.graphiql import SET_EDITOR, browser, open_graphiql, pytestmark

__all__ = ["browser", "pytestmark"]

QUERY_EDITOR = ".graphiql-query-editor .CodeMirror"


def edit(browser: WebDriver, document: str) -> None:
    editor = browser.find_element(By.CSS_SELECTOR, QUERY_EDITOR)
    browser.execute_script(SET_EDITOR, editor, document)


def url_query(browser: WebDriver) -> str | None:
    value: str | None = browser.execute_script("return new URLSearchParams(location.search).get('query')")
    return value


def editor_text(browser: WebDriver) -> str:
    editor = browser.find_element(By.CSS_SELECTOR, QUERY_EDITOR)
    text: str = browser.execute_script("return arguments[0].CodeMirror.getValue()", editor)
    return text


def test_reload_after_editing_shows_graphiql_prefilled(browser: WebDriver, server: ServerProcess) -> None:
    open_graphiql(browser, server)
    # the Explorer opens by itself once the schema is in
    WebDriverWait(browser, 30).until(lambda d: d.find_elements(By.CSS_SELECTOR, ".graphiql-explorer-root"))

    document = "{ me { id displayName } }"
    edit(browser, document)
    WebDriverWait(browser, 10).until(lambda d: url_query(d) == document)
    browser.refresh()
    WebDriverWait(browser, 30).until(lambda d: d.find_elements(By.CSS_SELECTOR, QUERY_EDITOR))
    assert editor_text(browser) == document
    assert '"errors"' not in browser.find_element(By.TAG_NAME, "body").text[:200]

    secret = f"password-{uuid.uuid4().hex}"
    edit(browser, f'mutation {{ login(email: "a@example.com", password: "{secret}") {{ token }} }}')
    WebDriverWait(browser, 10).until(lambda d: url_query(d) is None)
    assert secret not in browser.current_url
    browser.refresh()
    WebDriverWait(browser, 30).until(lambda d: d.find_elements(By.CSS_SELECTOR, QUERY_EDITOR))
    assert secret not in browser.current_url
