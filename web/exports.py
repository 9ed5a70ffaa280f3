"""GET /exports/{id}?token=…: a data export's archive, for whoever holds the link that was mailed.

The token is the only credential (the mail proved the address), compared by digest in constant time; a
wrong or expired token, someone else's id and one that names nothing all get the same 404.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from starlette.requests import Request
from starlette.responses import FileResponse, PlainTextResponse, Response, StreamingResponse

from schema.errors import unavailable_after
from services.exports import downloadable
from storage import StoreUnavailable
from web.state import resources_of

MAX_TOKEN = 100  # longer than any token we issue: a huge one costs no hashing
_HEADERS = {
    "Cache-Control": "no-store",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
}
FILENAME = "proofloop-export.zip"
_DISPOSITION = f'attachment; filename="{FILENAME}"'


def exports_endpoint() -> Callable[[Request], Awaitable[Response]]:
    async def serve_export(request: Request) -> Response:
        token = request.query_params.get("token", "")
        name = None
        if 0 < len(token) <= MAX_TOKEN:
            name = await downloadable(request.path_params["export_id"], token)
        try:
            body = await resources_of(request).archives.open(name) if name is not None else None
        except StoreUnavailable as exc:
            refused = unavailable_after(exc, "export read")  # counted by the media store's outage
            retry = str(refused.retry_after_seconds if refused is not None else 1)
            headers = {**_HEADERS, "Retry-After": retry}
            return PlainTextResponse("Service Unavailable", status_code=503, headers=headers)
        if body is None:
            return PlainTextResponse("Not Found", status_code=404, headers=_HEADERS)
        if body.path is not None:
            return FileResponse(body.path, media_type="application/zip", filename=FILENAME, headers=_HEADERS)
        headers = {**_HEADERS, "Content-Length": str(body.size), "Content-Disposition": _DISPOSITION}
        return StreamingResponse(body.chunks, media_type="application/zip", headers=headers)

    return serve_export
