"""GET /exports/{id}?token=…: a data export's archive, for whoever holds the link that was mailed; or
GET /exports/{id}?viewer=…&session=…&exp=…&sig=…: the signed link DataExport.downloadUrl gave its owner.

The mailed token is a credential of its own (the mail proved the address), compared by digest in constant
time; a signed link vouches for its owner while the session it was issued to lives. A wrong or expired
token or signature, someone else's id and one that names nothing all get the same 404.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from starlette.requests import Request
from starlette.responses import FileResponse, PlainTextResponse, Response, StreamingResponse

from schema.errors import unavailable_after
from services.accounts import token_is_live
from services.exports import downloadable, downloadable_by_owner
from services.kit import decode_id, is_uuid, whole_number
from services.media import EXPORT_LINK, LinkSigner
from settings import Settings
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


async def _signed_for(request: Request, signer: LinkSigner, export_id: str) -> str | None:
    """The archive a signed link names, if it is valid, its session lives and its viewer owns the export."""
    params = request.query_params
    viewer, expires, sig, session = (
        params.get("viewer"),
        params.get("exp", ""),
        params.get("sig"),
        params.get("session", ""),
    )
    expiry = whole_number(expires)
    if viewer is None or sig is None or expiry is None or not is_uuid(session) or not is_uuid(viewer):
        return None
    if not signer.is_valid(export_id, viewer, EXPORT_LINK, session, expiry, sig):
        return None
    if not await token_is_live(session):
        return None
    return await downloadable_by_owner(export_id, viewer)


def exports_endpoint(settings: Settings) -> Callable[[Request], Awaitable[Response]]:
    signer = LinkSigner(settings.resolved_secret_key, settings.media_link_period_seconds)

    async def serve_export(request: Request) -> Response:
        # the API's id of the export (DataExport.id), or its bare key (what the mailed link carries)
        export_id = decode_id(request.path_params["export_id"], "DataExport") or ""
        token = request.query_params.get("token", "")
        name = None
        if 0 < len(token) <= MAX_TOKEN:
            name = await downloadable(export_id, token)
        elif "sig" in request.query_params and is_uuid(export_id):
            name = await _signed_for(request, signer, export_id)
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
