"""GET /media/{verification_id}: a proof's metadata-free copy or thumbnail, for its owner and active partners.

Access is decided at request time from a signed link (`viewer`, `session`, `exp`, `sig`; the token it was
issued to must still be live) or a bearer header: the viewer must still be the owner, or an ACTIVE
partner that services/partners/access.py lets see the proof. Everyone else, and every bad or expired
signature, gets the same 404, so a link never tells whether the proof exists.

The bytes come through this endpoint whatever the store (a file here, an S3 object streamed through):
never a presigned bucket URL, which would outlive the session it was issued to and skip this check.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable

from starlette.requests import Request
from starlette.responses import FileResponse, PlainTextResponse, Response, StreamingResponse

from models import Verification
from schema.errors import unavailable_after
from services.accounts import authenticate, bearer_token, token_is_live
from services.kit import Unauthenticated, decode_id, is_uuid, whole_number
from services.media import MEDIA_EXTENSIONS, LinkSigner
from services.partners import access_for
from settings import Settings
from storage import StoreUnavailable
from web.state import resources_of

KINDS = ("media", "thumbnail")
BEARER_FRESH_SECONDS = 300
THUMBNAIL_MIME = "image/jpeg"  # rules.media.thumbnail_jpeg
_SAFETY_HEADERS = {
    "X-Content-Type-Options": "nosniff",
    # served bytes are never a page: no scripts even if a browser is talked into rendering one
    "Content-Security-Policy": "default-src 'none'; sandbox; frame-ancestors 'none'",
    "X-Frame-Options": "DENY",
}


def content_disposition(verification_id: str, kind: str, mime: str) -> str:
    """inline for the types a browser shows as media, with a filename of ours; attachment otherwise."""
    extension = MEDIA_EXTENSIONS.get(mime)
    if extension is None:
        return "attachment"
    return f'inline; filename="proof-{verification_id}-{kind}.{extension}"'


def _not_found() -> Response:
    return PlainTextResponse("Not Found", status_code=404, headers=_SAFETY_HEADERS)


async def _viewer_id(request: Request, settings: Settings, verification_id: str, kind: str) -> str | None:
    """Who is asking: the bearer token's user, else the viewer a valid signature vouches for."""
    token = bearer_token(request.headers.get("authorization"))
    if token is not None:
        try:
            session = await authenticate(token, token_ttl_seconds=settings.token_ttl_seconds)
        except Unauthenticated:
            return None
        return str(session.user.id)
    params = request.query_params
    viewer, expires, sig = params.get("viewer"), whole_number(params.get("exp")), params.get("sig")
    token_id = params.get("session", "")
    if viewer is None or sig is None or expires is None or not is_uuid(token_id):
        return None
    signer = LinkSigner(settings.resolved_secret_key, settings.media_link_period_seconds)
    if not signer.is_valid(verification_id, viewer, kind, token_id, expires, sig):
        return None
    # the link dies with the token it was issued to (logout, password change, expiry)
    return viewer if await token_is_live(token_id) else None


def _fresh_for(request: Request) -> int:
    """How long a response may be reused: as long as its signed link lives (a bearer request: 5 minutes)."""
    expires = whole_number(request.query_params.get("exp"))
    if expires is not None:
        return max(0, expires - int(time.time()))
    return BEARER_FRESH_SECONDS


def _tags(header: str | None) -> set[str]:
    return {tag.strip().removeprefix("W/") for tag in (header or "").split(",") if tag.strip()}


def _unavailable(error: StoreUnavailable) -> Response:
    refused = unavailable_after(error, "media read")  # counted by the media store's outage
    retry = str(refused.retry_after_seconds if refused is not None else 1)
    headers = {**_SAFETY_HEADERS, "Retry-After": retry}
    return PlainTextResponse("Service Unavailable", status_code=503, headers=headers)


def media_endpoint(settings: Settings) -> Callable[[Request], Awaitable[Response]]:
    async def serve_media(request: Request) -> Response:
        # the API's id of the proof, or its bare key (what signed links carry)
        verification_id = decode_id(request.path_params["verification_id"], "Verification")
        kind = request.query_params.get("kind", "media")
        if kind not in KINDS or verification_id is None:
            return _not_found()
        viewer_id = await _viewer_id(request, settings, verification_id, kind)
        row = (
            await Verification.filter(id=verification_id).select_related("instance__task").first()
            if viewer_id
            else None
        )
        if viewer_id is None or row is None:
            return _not_found()
        access = await access_for(viewer_id)
        # the owner keeps their own media; a partner sees only what services/partners/access.py lets them
        if not (access.owns(row.user_id) or access.sees_instance(row.instance, row.instance.task)):
            return _not_found()
        digest, mime = (
            (row.media_digest, row.media_mime) if kind == "media" else (row.thumbnail_digest, THUMBNAIL_MIME)
        )
        if digest is None or mime is None:
            return _not_found()
        disposition = content_disposition(verification_id, kind, mime)  # an id checked as a UUID
        # the bytes of a proof's media never change (they are named by their digest): a cache may keep
        # them as long as the link lives, and revalidate with the digest as the entity tag
        etag = f'"{digest}"'
        headers = {
            **_SAFETY_HEADERS,
            "Content-Disposition": disposition,
            "ETag": etag,
            "Cache-Control": f"private, max-age={_fresh_for(request)}, immutable",
        }
        if etag in _tags(request.headers.get("if-none-match")):
            return Response(status_code=304, headers=headers)
        try:
            body = await resources_of(request).media_store.open(digest)
        except StoreUnavailable as exc:
            return _unavailable(exc)
        if body is None:
            return _not_found()
        if body.path is not None:
            return FileResponse(body.path, media_type=mime, headers=headers)
        headers["Content-Length"] = str(body.size)
        return StreamingResponse(body.chunks, media_type=mime, headers=headers)

    return serve_media
