"""APNs and FCM: the events a webhook would carry, sent to an iOS or Android device through Apple's and
Google's HTTP APIs, from the same outbox as webhooks and Web Push.

- APNs (HTTP/2 only): `POST {PROOFLOOP_APNS_URL}/3/device/<token>` with a provider token (an ES256 JWT
  of the operator's .p8 key, `kid` and team id, reused for 50 minutes as Apple asks), `apns-topic` (the
  app's bundle id), `apns-push-type: alert`, `apns-id` (the delivery id, so Apple deduplicates a retry).
- FCM (HTTP v1): `POST {PROOFLOOP_FCM_URL}/v1/projects/<project>/messages:send` with an OAuth 2.0 access
  token obtained from the service account's key (an RS256 JWT assertion posted to its `token_uri`, reused
  until a minute before it expires).

The message shows a short text (the task's title, who did what) and carries the webhook payload for the
app (`proofloop` in APNs, `data.payload` in FCM). A device the service no longer knows (APNs 410, FCM 404)
is removed, as a browser's forgotten subscription is.
"""

from __future__ import annotations

import asyncio
import base64
import json
import re
import time
from dataclasses import dataclass, field
from typing import Any

import httpx
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, padding, rsa
from cryptography.hazmat.primitives.asymmetric.utils import decode_dss_signature

from models import Transport
from services.kit import BadInput

APNS_TOKEN_SECONDS = 50 * 60  # Apple refuses a provider token older than an hour, and a new one more than
# every 20 minutes
FCM_SCOPE = "https://www.googleapis.com/auth/firebase.messaging"
TOKEN_TIMEOUT_SECONDS = 10.0
MAX_PAYLOAD_BYTES = 3_000  # both take 4 KiB: the payload travels whole when it fits, else its short form
_APNS_TOKEN = re.compile(r"[0-9a-fA-F]{64,200}")
_FCM_TOKEN = re.compile(r"[A-Za-z0-9_:\-]{20,1000}")
_PHRASES = {
    "VERIFIED": "verified",
    "MISSED": "missed",
    "EXCUSED": "excused: the service was down",
    "REJECTED": "rejected",
    "PROOF_SUBMITTED": "sent a proof",
    "REVIEW_REQUESTED": "asks for your review",
    "APPEAL_REQUESTED": "appeals a verdict",
    "DUE_SOON": "due soon",
    "PING": "a test notification from Proofloop",
}


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def _jwt(header: dict[str, str], claims: dict[str, Any], sign: Any) -> str:
    signing_input = f"{_b64(json.dumps(header).encode())}.{_b64(json.dumps(claims).encode())}"
    return f"{signing_input}.{_b64(sign(signing_input.encode()))}"


def checked_device_token(transport: Transport, token: str) -> str:
    """A device token as the platform hands it to the app; BAD_USER_INPUT otherwise."""
    token = token.strip()
    pattern = _APNS_TOKEN if transport is Transport.APNS else _FCM_TOKEN
    if not pattern.fullmatch(token):
        shape = "64 or more hex digits" if transport is Transport.APNS else "an FCM registration token"
        raise BadInput("input.token", f"must be {shape}")
    return token.lower() if transport is Transport.APNS else token


def notification_text(payload: dict[str, Any]) -> tuple[str, str]:
    """(title, body) a phone shows: the task, and who did what (your own events say only what)."""
    kind = str(payload.get("type", ""))
    phrase = _PHRASES.get(kind, kind.replace("_", " ").lower())
    task = (payload.get("task") or {}).get("title") or "Proofloop"
    recipient = payload.get("recipient") or {}
    who = (payload.get("user") or {}).get("displayName")
    if recipient.get("role") == "PARTNER" and who:
        return task, f"{who} {phrase}"
    return task, phrase[:1].upper() + phrase[1:]


def _short(body: bytes) -> dict[str, Any]:
    payload: dict[str, Any] = json.loads(body)
    if len(body) <= MAX_PAYLOAD_BYTES:
        return payload
    return {k: payload.get(k) for k in ("type", "deliveryId", "occurredAt", "event")}


@dataclass
class ApnsSender:
    """Provider tokens for Apple, one at a time per process."""

    url: str
    key_id: str
    team_id: str
    topic: str
    private_key: ec.EllipticCurvePrivateKey
    _token: tuple[str, float] | None = field(default=None, init=False)

    @staticmethod
    def of(url: str, key_pem: str, key_id: str, team_id: str, topic: str) -> ApnsSender:
        key = serialization.load_pem_private_key(key_pem.encode(), password=None)
        if not isinstance(key, ec.EllipticCurvePrivateKey):
            raise ValueError("PROOFLOOP_APNS_KEY must be the .p8 (EC P-256) key Apple gives")
        return ApnsSender(url.rstrip("/"), key_id, team_id, topic, key)

    def provider_token(self, now: float | None = None) -> str:
        now = time.time() if now is None else now
        if self._token is None or now - self._token[1] >= APNS_TOKEN_SECONDS:

            def sign(message: bytes) -> bytes:
                r, s = decode_dss_signature(self.private_key.sign(message, ec.ECDSA(hashes.SHA256())))
                return r.to_bytes(32, "big") + s.to_bytes(32, "big")

            token = _jwt({"alg": "ES256", "kid": self.key_id}, {"iss": self.team_id, "iat": int(now)}, sign)
            self._token = (token, now)
        return self._token[0]

    def request(
        self, device: str, body: bytes, delivery_id: str, urgent: bool
    ) -> tuple[str, bytes, dict[str, str]]:
        payload = _short(body)
        title, text = notification_text(payload)
        message = {"aps": {"alert": {"title": title, "body": text}, "sound": "default"}, "proofloop": payload}
        headers = {
            "authorization": f"bearer {self.provider_token()}",
            "apns-topic": self.topic,
            "apns-push-type": "alert",
            "apns-priority": "10" if urgent else "5",
            "apns-expiration": str(int(time.time()) + 86_400),
            "apns-id": delivery_id,
            "content-type": "application/json",
        }
        return self.endpoint(device), json.dumps(message).encode(), headers

    def endpoint(self, device: str) -> str:
        return f"{self.url}/3/device/{device}"


@dataclass
class FcmSender:
    """OAuth access tokens from a service account's key, one at a time per process."""

    url: str
    project_id: str
    client_email: str
    token_uri: str
    private_key: rsa.RSAPrivateKey
    _token: tuple[str, float] | None = field(default=None, init=False)
    _lock: asyncio.Lock = field(default_factory=asyncio.Lock, init=False)

    @staticmethod
    def of(url: str, service_account: str) -> FcmSender:
        account = json.loads(service_account)
        key = serialization.load_pem_private_key(account["private_key"].encode(), password=None)
        if not isinstance(key, rsa.RSAPrivateKey):
            raise ValueError("the FCM service account's private_key must be an RSA key")
        return FcmSender(
            url.rstrip("/"), account["project_id"], account["client_email"], account["token_uri"], key
        )

    async def access_token(self) -> str:
        async with self._lock:  # one exchange at a time: a burst shares it
            now = time.time()
            if self._token is not None and now < self._token[1]:
                return self._token[0]
            claims = {
                "iss": self.client_email,
                "scope": FCM_SCOPE,
                "aud": self.token_uri,
                "iat": int(now),
                "exp": int(now) + 3600,
            }

            def sign(message: bytes) -> bytes:
                return self.private_key.sign(message, padding.PKCS1v15(), hashes.SHA256())

            assertion = _jwt({"alg": "RS256", "typ": "JWT"}, claims, sign)
            form = {"grant_type": "urn:ietf:params:oauth:grant-type:jwt-bearer", "assertion": assertion}
            async with httpx.AsyncClient(timeout=TOKEN_TIMEOUT_SECONDS, trust_env=False) as client:
                answer = await client.post(self.token_uri, data=form)
            answer.raise_for_status()
            granted = answer.json()
            self._token = (str(granted["access_token"]), now + float(granted.get("expires_in", 3600)) - 60)
            return self._token[0]

    async def request(self, device: str, body: bytes, urgent: bool) -> tuple[str, bytes, dict[str, str]]:
        payload = _short(body)
        title, text = notification_text(payload)
        message = {
            "message": {
                "token": device,
                "notification": {"title": title, "body": text},
                "data": {"payload": json.dumps(payload)},  # FCM data values are strings
                "android": {"priority": "HIGH" if urgent else "NORMAL", "ttl": "86400s"},
            }
        }
        token = await self.access_token()
        headers = {"authorization": f"Bearer {token}", "content-type": "application/json"}
        return self.endpoint(), json.dumps(message).encode(), headers

    def endpoint(self) -> str:
        return f"{self.url}/v1/projects/{self.project_id}/messages:send"


@dataclass(frozen=True)
class NativePush:
    """The platforms this deployment can send to (PROOFLOOP_APNS_*, PROOFLOOP_FCM_*); None: not set up."""

    apns: ApnsSender | None = None
    fcm: FcmSender | None = None

    def sends(self, transport: Transport) -> bool:
        return (self.apns if transport is Transport.APNS else self.fcm) is not None
