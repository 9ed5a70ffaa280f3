"""GraphiQL served from this API: our page (web/graphiql.html) and its assets at /graphiql-assets/.

The assets are copied from graphiql/node_modules by `make install` (npm ci + npm run vendor), so the page
works with no internet, unlike Strawberry's, which loads them from a CDN.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path

from starlette.middleware.gzip import GZipMiddleware
from starlette.routing import Mount
from starlette.staticfiles import StaticFiles

HERE = Path(__file__).resolve().parent
PAGE = HERE / "graphiql.html"
ASSETS_DIR = HERE / "static" / "graphiql" / "vendor"
ASSETS_PATH = "/graphiql-assets"

MISSING_ASSETS_PAGE = """<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Proofloop GraphiQL</title></head>
<body style="font-family: sans-serif; margin: 2em">
<h1>GraphiQL's assets are not installed</h1>
<p>Run <code>make install</code> (it runs <code>npm ci</code> and <code>npm run vendor</code> in
<code>graphiql/</code>), then reload. The GraphQL API itself works: POST to this URL.</p>
</body></html>
"""


@cache
def _page() -> str:
    return PAGE.read_text()


def graphiql_page() -> str:
    # checked per request: installing the assets needs no restart
    if not (ASSETS_DIR / "graphiql.min.js").exists():
        return MISSING_ASSETS_PAGE
    return _page()


def graphiql_assets() -> Mount:
    # the GraphiQL bundle is ~3.5 MB of JavaScript: compressed it loads in a fraction of the time
    static = StaticFiles(directory=ASSETS_DIR, check_dir=False)
    return Mount(ASSETS_PATH, app=GZipMiddleware(static), name="graphiql-assets")
