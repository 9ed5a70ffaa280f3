"""Idempotency keys: a mutation retried with its client's key runs once, and every retry gets its answer."""

from __future__ import annotations

from services.idempotency.keys import (
    Answer,
    Busy,
    Claimed,
    KeyPolicy,
    Mismatch,
    claim_key,
    delete_expired_keys,
    finish_key,
    release_key,
)

__all__ = [
    "Answer",
    "Busy",
    "Claimed",
    "KeyPolicy",
    "Mismatch",
    "claim_key",
    "delete_expired_keys",
    "finish_key",
    "release_key",
]
