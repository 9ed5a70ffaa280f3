"""Web Push: the events a webhook would carry, sent to a browser's push service instead.

A browser subscribes with `PushManager.subscribe({applicationServerKey})` and hands us its subscription:
an endpoint at its push service, and the keys a message is encrypted for (`p256dh`, its P-256 public key,
and `auth`, 16 random bytes). Each delivery is the webhook body, encrypted for those keys (RFC 8291,
`aes128gcm`), identified to the push service by our VAPID key (RFC 8292), and POSTed to the endpoint
(RFC 8030) through the same outbox, lanes, address checks and retries as a webhook. A push service that
answers 404 or 410 says the subscription is gone: it is removed.

The VAPID key is derived from PROOFLOOP_SECRET_KEY unless PROOFLOOP_VAPID_PRIVATE_KEY names one, so every
process of a deployment signs with the same key (browsers bind subscriptions to it).
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import time
from dataclasses import dataclass
from urllib.parse import urlsplit

import http_ece
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec
from py_vapid import Vapid02

from services.kit import BadInput

KEY_BYTES = 65  # an uncompressed P-256 point
AUTH_BYTES = 16
TTL_SECONDS = 86_400  # how long a push service keeps a message for a browser that is offline
JWT_LIFETIME_SECONDS = 12 * 3600  # RFC 8292: at most 24 hours
MAX_PAYLOAD_BYTES = 3_000  # a push service takes 4 KiB records; what is larger goes as a short notice
_CURVE_ORDER = int("FFFFFFFF00000000FFFFFFFFFFFFFFFFBCE6FAADA7179E84F3B9CAC2FC632551", 16)


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def _unb64(text: str, field: str) -> bytes:
    try:
        return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
    except (ValueError, TypeError):
        raise BadInput(field, "must be base64url, as PushSubscription.getKey() gives it") from None


@dataclass(frozen=True)
class BrowserKeys:
    """What a message is encrypted for: the browser's public key and its auth secret."""

    p256dh: bytes
    auth: bytes

    @staticmethod
    def given(p256dh: str, auth: str) -> BrowserKeys:
        """From the subscription's keys as a browser gives them (base64url); BAD_USER_INPUT otherwise."""
        if len(p256dh) > 200 or len(auth) > 100:
            raise BadInput("input.keys", "is longer than any browser's keys")
        public, secret = _unb64(p256dh, "input.keys.p256dh"), _unb64(auth, "input.keys.auth")
        if len(public) != KEY_BYTES or public[0] != 4:
            raise BadInput("input.keys.p256dh", "must be an uncompressed P-256 public key (65 bytes)")
        try:
            ec.EllipticCurvePublicKey.from_encoded_point(ec.SECP256R1(), public)
        except ValueError:
            raise BadInput("input.keys.p256dh", "is not a point on P-256") from None
        if len(secret) != AUTH_BYTES:
            raise BadInput("input.keys.auth", f"must be {AUTH_BYTES} bytes")
        return BrowserKeys(public, secret)

    def stored(self) -> str:
        return json.dumps({"p256dh": _b64(self.p256dh), "auth": _b64(self.auth)})

    @staticmethod
    def read(stored: str) -> BrowserKeys:
        keys = json.loads(stored)
        return BrowserKeys(
            _unb64(keys["p256dh"], "p256dh"),
            _unb64(keys["auth"], "auth"),
        )


class VapidIdentity:
    """Our application server key: signs each request's JWT, and is what browsers subscribe with."""

    def __init__(self, private_key: ec.EllipticCurvePrivateKey, subject: str) -> None:
        self._vapid = Vapid02(private_key=private_key)
        self.subject = subject
        point = private_key.public_key().public_bytes(
            serialization.Encoding.X962, serialization.PublicFormat.UncompressedPoint
        )
        self.public_key = _b64(point)  # applicationServerKey

    @staticmethod
    def of(secret_key: str, configured: str | None, subject: str) -> VapidIdentity:
        """PROOFLOOP_VAPID_PRIVATE_KEY (base64url of the 32-byte scalar), else one derived from the
        deployment's secret key."""
        if configured:
            scalar = int.from_bytes(_unb64(configured.strip(), "PROOFLOOP_VAPID_PRIVATE_KEY"), "big")
        else:
            digest = hmac.new(secret_key.encode(), b"proofloop web push vapid key", hashlib.sha512).digest()
            scalar = int.from_bytes(digest, "big") % (_CURVE_ORDER - 1) + 1
        return VapidIdentity(ec.derive_private_key(scalar, ec.SECP256R1()), subject)

    def authorization(self, endpoint: str, now: float | None = None) -> str:
        parts = urlsplit(endpoint)
        claims = {
            "aud": f"{parts.scheme}://{parts.netloc}",
            "exp": int((time.time() if now is None else now) + JWT_LIFETIME_SECONDS),
            "sub": self.subject,
        }
        header: dict[str, str] = self._vapid.sign(claims)
        return header["Authorization"]


def push_request(
    body: bytes, keys: BrowserKeys, endpoint: str, vapid: VapidIdentity, urgent: bool
) -> tuple[bytes, dict[str, str]]:
    """The POST a push service takes for one delivery: the encrypted body and its headers."""
    if len(body) > MAX_PAYLOAD_BYTES:
        notice = json.loads(body)
        body = json.dumps({k: notice.get(k) for k in ("type", "deliveryId", "occurredAt", "event")}).encode()
    sender_key = ec.generate_private_key(ec.SECP256R1())  # a fresh key per message (RFC 8291)
    encrypted: bytes = http_ece.encrypt(
        body, private_key=sender_key, dh=keys.p256dh, auth_secret=keys.auth, version="aes128gcm"
    )
    headers = {
        "Content-Type": "application/octet-stream",
        "Content-Encoding": "aes128gcm",
        "TTL": str(TTL_SECONDS),
        "Urgency": "high" if urgent else "normal",
        "Authorization": vapid.authorization(endpoint),
    }
    return encrypted, headers
