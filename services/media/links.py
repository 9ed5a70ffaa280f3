"""Signed links to what a viewer may download: a proof's media and thumbnail, an export's archive.

A link is an HMAC over what it names (the path's object and kind), the viewer, the session (the id of the
token it was issued to) and its expiry. An <img> tag or a download manager uses it without headers; it
dies at its expiry, or at once when the token it was issued to is revoked or expires (the endpoint checks
the token is still live).

Links are stable: the expiry is the end of the next whole period (`period` seconds, on the clock's epoch),
so the same object, viewer and session get the same URL for a whole period, and an image cache keyed by
URL hits; each link lives between one and two periods.
"""

from __future__ import annotations

import hashlib
import hmac
import time
from dataclasses import dataclass
from urllib.parse import urlencode

# the media types our re-encoders write, and the extension a file of each is named with (served inline,
# exported); anything else would be downloaded, never rendered
MEDIA_EXTENSIONS = {
    "image/jpeg": "jpg",
    "image/png": "png",
    "image/webp": "webp",
    "video/mp4": "mp4",
    "video/webm": "webm",
}
CLOCK_SKEW_SECONDS = 5
EXPORT_LINK = "export"  # the kind an export's link is signed for


@dataclass(frozen=True)
class LinkSigner:
    secret: str
    period_seconds: int  # PROOFLOOP_MEDIA_LINK_PERIOD_SECONDS

    def expiry(self, now: float | None = None) -> int:
        """The end of the period after the current one: the same for every link issued this period."""
        now = time.time() if now is None else now
        return (int(now) // self.period_seconds + 2) * self.period_seconds

    def _signature(self, subject: str, viewer_id: str, kind: str, session: str, expires: int) -> str:
        message = f"{subject}|{viewer_id}|{kind}|{session}|{expires}".encode()
        return hmac.new(self.secret.encode(), message, hashlib.sha256).hexdigest()

    def link(
        self, path: str, subject: str, viewer_id: str, kind: str, session: str, expires: int | None = None
    ) -> str:
        """`path` with the signed query; `subject` is the id the path names, `session` the token's id."""
        expires = self.expiry() if expires is None else expires
        sig = self._signature(subject, viewer_id, kind, session, expires)
        query = urlencode({"kind": kind, "viewer": viewer_id, "session": session, "exp": expires, "sig": sig})
        return f"{path}?{query}"

    def is_valid(self, subject: str, viewer_id: str, kind: str, session: str, expires: int, sig: str) -> bool:
        now = time.time()
        if expires < now or expires > now + 2 * self.period_seconds + CLOCK_SKEW_SECONDS:
            return False
        expected = self._signature(subject, viewer_id, kind, session, expires)
        return hmac.compare_digest(expected, sig)


def media_path(verification_id: str) -> str:
    return f"/media/{verification_id}"


def export_path(export_id: str) -> str:
    return f"/exports/{export_id}"
