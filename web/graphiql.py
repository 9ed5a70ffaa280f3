"""GraphiQL served from this API: our page (web/graphiql.html) and its assets at /graphiql-assets/.

The assets are copied from graphiql/node_modules by `make install` (npm ci + npm run vendor), so the page
works with no internet, unlike Strawberry's, which loads them from a CDN. Since everything is local, the
page's Content-Security-Policy allows only this origin and the page's own inline script and style (by
hash): an injected script or a page that frames GraphiQL (clickjacking a logged-in tab) gets nothing.
"""

from __future__ import annotations

import base64
import hashlib
import re
from functools import cache
from pathlib import Path

from starlette.middleware.gzip import GZipMiddleware
from starlette.responses import HTMLResponse
from starlette.routing import Mount
from starlette.staticfiles import StaticFiles
from starlette.types import ASGIApp, Message, Receive, Scope, Send

HERE = Path(__file__).resolve().parent
PAGE = HERE / "graphiql.html"
ASSETS_DIR = HERE / "static" / "graphiql" / "vendor"
ASSETS_PATH = "/graphiql-assets"

MISSING_ASSETS_PAGE = """<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Proofloop GraphiQL</title></head>
<style>body { font-family: sans-serif; margin: 2em }</style>
<body>
<h1>GraphiQL's assets are not installed</h1>
<p>Run <code>make install</code> (it runs <code>npm ci</code> and <code>npm run vendor</code> in
<code>graphiql/</code>), then reload. The GraphQL API itself works: POST to this URL.</p>
</body></html>
"""


@cache
def _page() -> str:
    return PAGE.read_text()


_INLINE = re.compile(r"<(script|style)>(.*?)</\1>", re.DOTALL)
# what the assets need besides this origin: data: icons and fonts in GraphiQL's CSS ('self' covers ws:)
_SOURCES = {"img-src": "'self' data:", "font-src": "'self' data:", "connect-src": "'self'"}
FRAMING_AND_SNIFFING = {"X-Frame-Options": "DENY", "X-Content-Type-Options": "nosniff"}


def graphiql_page() -> str:
    # checked per request: installing the assets needs no restart
    if not (ASSETS_DIR / "graphiql.min.js").exists():
        return MISSING_ASSETS_PAGE
    return _page()


@cache
def content_security_policy(page: str) -> str:
    """This origin, plus the page's own inline <script> and <style> elements by their sha256."""
    hashes: dict[str, list[str]] = {"script": [], "style": []}
    for kind, body in _INLINE.findall(page):
        digest = base64.b64encode(hashlib.sha256(body.encode()).digest()).decode()
        hashes[kind].append(f"'sha256-{digest}'")
    directives = {
        "default-src": "'none'",
        "script-src": " ".join(["'self'", *hashes["script"]]),
        "style-src": " ".join(["'self'", *hashes["style"]]),
        **_SOURCES,
        "base-uri": "'none'",
        "form-action": "'none'",
        "frame-ancestors": "'none'",
    }
    return "; ".join(f"{name} {sources}" for name, sources in directives.items())


def graphiql_response() -> HTMLResponse:
    page = graphiql_page()
    headers = {"Content-Security-Policy": content_security_policy(page), **FRAMING_AND_SNIFFING}
    # the page keeps the current document in ?query=: it never leaves in a Referer
    return HTMLResponse(page, headers={**headers, "Referrer-Policy": "no-referrer"})


class _AssetHeaders:
    """nosniff and no framing on every asset response (a 404 included)."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        async def send_with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                extra = [(k.lower().encode(), v.encode()) for k, v in FRAMING_AND_SNIFFING.items()]
                message["headers"] = [*message.get("headers", []), *extra]
            await send(message)

        await self.app(scope, receive, send_with_headers)


def graphiql_assets() -> Mount:
    # the GraphiQL bundle is ~3.5 MB of JavaScript: compressed it loads in a fraction of the time
    static = StaticFiles(directory=ASSETS_DIR, check_dir=False)
    return Mount(ASSETS_PATH, app=_AssetHeaders(GZipMiddleware(static)), name="graphiql-assets")
