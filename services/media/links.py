"""Signed, short-lived media URLs: an HMAC over verification, viewer, kind, the viewer's token and expiry.

An <img> tag can use the URL without headers, and a leaked link dies within minutes, or at once when the
token it was issued to is revoked (logout, password change) or expires: the server checks it is still live.
"""

from __future__ import annotations

import hashlib
import hmac
import time
from urllib.parse import urlencode

MAX_TTL_SECONDS = 600
# the media types our re-encoders write, and the extension a file of each is named with (served inline,
# exported); anything else would be downloaded, never rendered
MEDIA_EXTENSIONS = {
    "image/jpeg": "jpg",
    "image/png": "png",
    "image/webp": "webp",
    "video/mp4": "mp4",
    "video/webm": "webm",
}


def _signature(
    secret: str, verification_id: str, viewer_id: str, kind: str, session: str, expires: int
) -> str:
    message = f"{verification_id}|{viewer_id}|{kind}|{session}|{expires}".encode()
    return hmac.new(secret.encode(), message, hashlib.sha256).hexdigest()


def media_url(
    secret: str,
    verification_id: str,
    viewer_id: str,
    kind: str,
    session: str,
    ttl_seconds: int = MAX_TTL_SECONDS,
) -> str:
    """`session` is the id of the token the link is issued to (not the token itself)."""
    expires = int(time.time()) + min(ttl_seconds, MAX_TTL_SECONDS)
    sig = _signature(secret, verification_id, viewer_id, kind, session, expires)
    query = urlencode({"kind": kind, "viewer": viewer_id, "session": session, "exp": expires, "sig": sig})
    return f"/media/{verification_id}?{query}"


def link_is_valid(
    secret: str, verification_id: str, viewer_id: str, kind: str, session: str, expires: int, sig: str
) -> bool:
    if expires < time.time() or expires > time.time() + MAX_TTL_SECONDS + 5:
        return False
    expected = _signature(secret, verification_id, viewer_id, kind, session, expires)
    return hmac.compare_digest(expected, sig)
