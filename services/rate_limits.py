"""Failed-attempt limits, counted in Redis so every API process shares them.

A fixed window per key: simple, and enough to turn password guessing from millions of tries an hour
into a handful. When Redis does not answer, requests pass (availability over strictness).
"""

from __future__ import annotations

import hashlib
import logging
from dataclasses import dataclass

from redis.exceptions import RedisError

from realtime import notices
from services.errors import RateLimited

log = logging.getLogger("proofloop.rate_limits")

_PREFIX = "proofloop:failures:"


@dataclass(frozen=True)
class FailureLimit:
    name: str
    attempts: int
    window_seconds: int

    def key(self, subject: str) -> str:
        # hashed: the keys name accounts, and Redis is not where email addresses should be readable
        return _PREFIX + self.name + ":" + hashlib.sha256(subject.encode()).hexdigest()


async def check_failures(limit: FailureLimit, subject: str) -> None:
    """RATE_LIMITED once `subject` has failed `limit.attempts` times within the window."""
    try:
        failures = await notices.client().get(limit.key(subject))
    except (RedisError, RuntimeError):
        log.warning("rate limit %s not checked: Redis did not answer", limit.name)
        return
    if failures is not None and int(failures) >= limit.attempts:
        raise RateLimited(f"too many failed attempts; try again within {limit.window_seconds} seconds")


async def record_failure(limit: FailureLimit, subject: str) -> None:
    key = limit.key(subject)
    try:
        async with notices.client().pipeline(transaction=True) as pipe:
            # the window starts at the first failure (SET NX EX, then INCR keeps the expiry; Redis 6 too)
            pipe.set(key, 0, ex=limit.window_seconds, nx=True)
            pipe.incr(key)
            await pipe.execute()
    except (RedisError, RuntimeError):
        log.warning("rate limit %s not recorded: Redis did not answer", limit.name)
