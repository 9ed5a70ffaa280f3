"""Which browser origins may call the API: one rule for HTTP CORS and for websocket handshakes.

Configured origins are normalized as browsers send them (lowercase, no default port, no trailing slash);
one that can never match a browser's Origin header is dropped with a warning at start. In dev, every
http://localhost:* and http://127.0.0.1:* origin is allowed, whatever port the frontend's dev server uses.
"""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass
from urllib.parse import urlsplit

from strawberry.http.websocket_origin import normalize_origin

from settings import Settings

log = logging.getLogger("proofloop.cors")

DEV_ORIGIN_PATTERN = r"https?://(localhost|127\.0\.0\.1|\[::1\])(:\d+)?"

# headers common clients send: Apollo's client identification, Sentry and W3C tracing, request ids
DEFAULT_ALLOWED_HEADERS = (
    "Authorization",
    "Content-Type",
    "Accept",
    "Idempotency-Key",
    "apollographql-client-name",
    "apollographql-client-version",
    "apollo-require-preflight",
    "x-apollo-operation-name",
    "sentry-trace",
    "baggage",
    "traceparent",
    "tracestate",
    "x-request-id",
)


@dataclass(frozen=True)
class AllowedOrigins:
    exact: frozenset[str]
    pattern: str | None = None

    def allows(self, origin: str) -> bool:
        normalized = normalize_origin(origin)
        if normalized is None:
            return False
        if self.pattern is not None and re.fullmatch(self.pattern, normalized):
            return True
        return normalized in self.exact


def _configured(value: str) -> str | None:
    normalized = normalize_origin(value)
    parts = urlsplit(value.strip())
    if normalized is None or parts.path not in ("", "/") or parts.query or parts.fragment or parts.username:
        log.warning(
            "PROOFLOOP_CORS_ORIGINS: %r can never match a browser's Origin (scheme://host[:port], no path): "
            "ignored",
            value,
        )
        return None
    return normalized


def allowed_origins(settings: Settings) -> AllowedOrigins:
    exact = frozenset(o for o in map(_configured, settings.cors_origins) if o is not None)
    return AllowedOrigins(exact, DEV_ORIGIN_PATTERN if settings.env == "dev" else None)


def allowed_headers(settings: Settings) -> list[str]:
    return [*DEFAULT_ALLOWED_HEADERS, *settings.cors_allowed_headers]
