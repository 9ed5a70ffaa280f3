"""GET /exports/{id}?token=…: a data export's archive, for whoever holds the link that was mailed.

The token is the only credential (the mail proved the address), compared by digest in constant time; a
wrong or expired token, someone else's id and one that names nothing all get the same 404.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from starlette.requests import Request
from starlette.responses import FileResponse, PlainTextResponse, Response

from services.exports import downloadable
from settings import Settings

MAX_TOKEN = 100  # longer than any token we issue: a huge one costs no hashing
_HEADERS = {
    "Cache-Control": "no-store",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
}


def exports_endpoint(settings: Settings) -> Callable[[Request], Awaitable[Response]]:
    async def serve_export(request: Request) -> Response:
        token = request.query_params.get("token", "")
        path = None
        if 0 < len(token) <= MAX_TOKEN:
            path = await downloadable(request.path_params["export_id"], token, settings.exports_dir)
        if path is None:
            return PlainTextResponse("Not Found", status_code=404, headers=_HEADERS)
        return FileResponse(
            path, media_type="application/zip", filename="proofloop-export.zip", headers=_HEADERS
        )

    return serve_export
