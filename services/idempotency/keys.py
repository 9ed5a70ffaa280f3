"""A user's Idempotency-Key, claimed by the first request that carries it and answered from then on.

The first request with a key inserts its row (the unique (user, key) pair decides which of concurrent ones
is first), holding a lease while it runs; its answer is kept with the row. A later request with the key and
the same fingerprint gets that answer; with another fingerprint it is refused; while the first still runs it
waits, then is told to retry. A lease that passed with no answer means the request executing it died (its
process killed): the next retry takes the key over and runs, the one case where a mutation may run twice
(its first run committed and its process died before the answer was kept), documented in docs/api.md.
Times are the database's clock.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from datetime import timedelta

from tortoise.exceptions import IntegrityError

from models import IdempotencyKey
from services.kit import db_now

POLL_SECONDS = 0.1  # how often a request waiting on another with its key looks again


@dataclass(frozen=True)
class KeyPolicy:
    keep_seconds: int
    lease_seconds: float
    wait_seconds: float
    max_answer_bytes: int


@dataclass(frozen=True)
class Claimed:
    """This request runs the mutation: it must finish_key (or release_key) the row."""

    row_id: int


@dataclass(frozen=True)
class Answer:
    """The kept answer of the first request with this key (body None: not kept, being over the size limit
    or holding a secret shown once)."""

    status_code: int
    media_type: str | None
    retry_after: str | None
    body: bytes | None


@dataclass(frozen=True)
class Busy:
    """The first request with this key is still running after the wait."""


@dataclass(frozen=True)
class Mismatch:
    """The key was first used with another request."""


async def claim_key(
    user_id: str, key: str, fingerprint: str, policy: KeyPolicy
) -> Claimed | Answer | Busy | Mismatch:
    """Claim `key` for this request, or what a request that claimed it first says."""
    deadline = asyncio.get_running_loop().time() + policy.wait_seconds
    while True:
        now = await db_now()
        lease_until = now + timedelta(seconds=policy.lease_seconds)
        try:
            row = await IdempotencyKey.create(
                user_id=user_id,
                key=key,
                fingerprint=fingerprint,
                created_at=now,
                expires_at=now + timedelta(seconds=policy.keep_seconds),
                lease_until=lease_until,
            )
            return Claimed(row.id)
        except IntegrityError:
            pass
        held = await IdempotencyKey.filter(user_id=user_id, key=key).first()
        if held is None:  # expired and swept between the two statements: claim again
            continue
        if held.expires_at <= now:
            await IdempotencyKey.filter(id=held.id, expires_at=held.expires_at).delete()
            continue
        if held.fingerprint != fingerprint:
            return Mismatch()
        if held.answered:
            return Answer(held.status_code or 200, held.media_type, held.retry_after, held.body)
        if held.lease_until is not None and held.lease_until <= now:
            # its request died unanswered: take it over (a compare-and-set on the lease it held)
            taken = await IdempotencyKey.filter(id=held.id, lease_until=held.lease_until).update(
                lease_until=lease_until
            )
            if taken:
                return Claimed(held.id)
            continue
        if asyncio.get_running_loop().time() >= deadline:
            return Busy()
        await asyncio.sleep(POLL_SECONDS)


async def finish_key(claimed: Claimed, answer: Answer, policy: KeyPolicy) -> None:
    """Keep the answer of the request that claimed the key (its body only if small enough)."""
    body = answer.body if answer.body is not None and len(answer.body) <= policy.max_answer_bytes else None
    await IdempotencyKey.filter(id=claimed.row_id).update(
        answered=True,
        lease_until=None,
        status_code=answer.status_code,
        media_type=answer.media_type,
        retry_after=answer.retry_after,
        body=body,
    )


async def release_key(claimed: Claimed) -> None:
    """Give the key back: nothing ran (refused before execution), so a retry must run."""
    await IdempotencyKey.filter(id=claimed.row_id, answered=False).delete()


async def delete_expired_keys(limit: int = 1000) -> int:
    """Delete up to `limit` keys past their keeping time (the sweep; a claim also replaces an expired one)."""
    now = await db_now()
    expired = await IdempotencyKey.filter(expires_at__lte=now).limit(limit).values_list("id", flat=True)
    if not expired:
        return 0
    return await IdempotencyKey.filter(id__in=list(expired)).delete()
