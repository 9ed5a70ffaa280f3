"""The one signature scheme, both ways: webhooks we send and integration events we receive carry
`sha256=<hex>` of HMAC-SHA256(secret, "<timestamp>." + body), the timestamp in its own header."""

from __future__ import annotations

import hashlib
import hmac


def signature(secret: str, timestamp: str, body: bytes) -> str:
    digest = hmac.new(secret.encode(), timestamp.encode() + b"." + body, hashlib.sha256).hexdigest()
    return f"sha256={digest}"


def signature_matches(secret: str, timestamp: str, body: bytes, given: str) -> bool:
    """Compared in constant time: how long it takes tells nothing of how much of `given` was right."""
    return hmac.compare_digest(signature(secret, timestamp, body).encode(), given.encode("utf-8", "replace"))
