"""Public ids: the one codec for every id the API hands out or takes.

Every object's id is a global id (Relay): base64url, unpadded, of "<Type>:<key>", e.g. "Task:<uuid>".
Every id argument takes a global id of its type or the bare key (a UUID, as earlier responses and webhook
bodies carry it); anything else, a global id of another type included, names nothing (NOT_FOUND).

An event's key is its feed position enciphered with the server secret (`EventIds`): clients resume with
it, but it tells them neither how many events the platform has nor how two users' events are ordered.
"""

from __future__ import annotations

import binascii
import hmac
import re
from base64 import urlsafe_b64decode, urlsafe_b64encode
from functools import lru_cache
from uuid import UUID

from services.kit.errors import NotFound

# longer than any id we issue: decoding stays cheap whatever a client sends
MAX_ID_LENGTH = 200
EVENT_TYPE = "VerificationEvent"
# the names services use for what an id argument names, and the type of its global id
TYPE_OF = {
    "user": "User",
    "task": "Task",
    "instance": "TaskInstance",
    "verification": "Verification",
    "partnership": "Partnership",
    "session": "Session",
    "webhook": "Webhook",
    "push subscription": "PushSubscription",
    "delivery": "WebhookDelivery",
    "break": "TaskBreak",
}
_HALF = 2**64
_ROUNDS = 6
_HEX_BLOCK = re.compile(r"[0-9a-f]{32}")


def global_id(type_name: str, key: object) -> str:
    return urlsafe_b64encode(f"{type_name}:{key}".encode()).rstrip(b"=").decode()


def split_global_id(value: object) -> tuple[str, str] | None:
    """(type name, key) of a global id; None for anything else."""
    text = str(value)
    if len(text) > MAX_ID_LENGTH or not text.isascii():
        return None
    try:
        decoded = urlsafe_b64decode(text + "=" * (-len(text) % 4)).decode("ascii")
    except (binascii.Error, ValueError):
        return None
    type_name, colon, key = decoded.partition(":")
    return (type_name, key) if colon and type_name.isidentifier() else None


def _uuid(value: str) -> str | None:
    try:
        return str(UUID(value))
    except ValueError:
        return None


def decode_id(value: object, type_name: str) -> str | None:
    """The row key `value` names as a `type_name`: from its global id or a bare UUID; None otherwise."""
    text = str(value)
    if len(text) > MAX_ID_LENGTH:
        return None
    if (bare := _uuid(text)) is not None:
        return bare
    parts = split_global_id(text)
    if parts is None or parts[0] != type_name:
        return None
    return _uuid(parts[1])


def parse_id(value: object, what: str) -> str:
    """`decode_id` for a service's argument: NOT_FOUND (never a database error) for what names nothing."""
    key = decode_id(value, TYPE_OF[what])
    if key is None:
        raise NotFound(f"no such {what}")
    return key


def is_uuid(value: object) -> bool:
    return _uuid(str(value)) is not None


class EventIds:
    """Event positions enciphered as 128-bit blocks (a keyed Feistel permutation, HMAC-SHA256 rounds).

    The high half of the plain block is zero, so an id this server did not issue fails to decode.
    """

    def __init__(self, secret: str) -> None:
        self._key = hmac.digest(secret.encode(), b"proofloop event ids", "sha256")

    def _round(self, number: int, half: int) -> int:
        digest = hmac.digest(self._key, bytes([number]) + half.to_bytes(8, "big"), "sha256")
        return int.from_bytes(digest[:8], "big")

    def encode(self, position: int) -> str:
        left, right = 0, position
        for number in range(_ROUNDS):
            left, right = right, left ^ self._round(number, right)
        return global_id(EVENT_TYPE, f"{left:016x}{right:016x}")

    def decode(self, value: object) -> int | None:
        """The position an event id names; None for anything this server did not issue."""
        parts = split_global_id(value)
        if parts is None or parts[0] != EVENT_TYPE or not _HEX_BLOCK.fullmatch(parts[1]):
            return None
        left, right = int(parts[1][:16], 16), int(parts[1][16:], 16)
        for number in reversed(range(_ROUNDS)):
            left, right = right ^ self._round(number, left), left
        return right if left == 0 and right < _HALF // 2 else None


@lru_cache(maxsize=4)
def event_ids(secret: str) -> EventIds:
    return EventIds(secret)
