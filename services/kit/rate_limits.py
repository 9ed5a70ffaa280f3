"""Attempt limits, counted in Redis so every API process shares them, each count taken atomically BEFORE
the work it guards (argon2, a mail), so N concurrent requests can never all slip under the limit.

When Redis does not answer, requests pass (availability over strictness); while its outage is known,
at once, without asking it.
"""

from __future__ import annotations

import hashlib
import logging
from dataclasses import dataclass

from redis.exceptions import RedisError

from observability.outages import outage, report_failure
from realtime.redis_client import redis_client
from services.kit.errors import RateLimited

log = logging.getLogger("proofloop.rate_limits")

_PREFIX = "proofloop:limits:"
# an address the right password came from stays the owner's for this long
KNOWN_ADDRESS_SECONDS = 90 * 24 * 3600

# INCR then EXPIRE on the first hit, in one step; the reply is the wait (0: allowed)
_FIXED_WINDOW = """
local n = redis.call('INCR', KEYS[1])
if n == 1 then redis.call('EXPIRE', KEYS[1], ARGV[2]) end
if n > tonumber(ARGV[1]) then return math.max(1, redis.call('TTL', KEYS[1])) end
return 0
"""

# KEYS: known-address marker, the email's key, the email+address key. An address that has logged in to
# the account before counts on its own key, so strangers' failures never hold the owner back.
# Each try is counted before it is evaluated; from the `attempts`-th on, the next must wait base*2^k.
# Reply: {which key (1: the address's own), seconds to wait (0: go ahead)}.
_LOGIN_BACKOFF = """
local key, own = KEYS[2], 0
if redis.call('EXISTS', KEYS[1]) == 1 then key, own = KEYS[3], 1 end
local now = tonumber(redis.call('TIME')[1])
local wait_until = tonumber(redis.call('HGET', key, 'until') or '0')
if wait_until > now then return {own, wait_until - now} end
local n = redis.call('HINCRBY', key, 'n', 1)
local limit, ttl = tonumber(ARGV[1]), tonumber(ARGV[4])
if n >= limit then
  local wait = math.min(tonumber(ARGV[3]), tonumber(ARGV[2]) * 2 ^ (n - limit))
  redis.call('HSET', key, 'until', now + math.floor(wait))
  ttl = ttl + math.floor(wait)
end
redis.call('EXPIRE', key, ttl)
return {own, 0}
"""


def _not_checked(error: Exception, what: str) -> None:
    # an outage's failure is counted by the outage; no Redis client at all is this process's setup
    report_failure(log, what, error, "%s not checked: Redis did not answer", what, level=logging.WARNING)


def _key(*parts: str) -> str:
    # hashed: keys name accounts and addresses, and Redis is not where those should be readable
    return _PREFIX + parts[0] + ":" + hashlib.sha256("|".join(parts[1:]).encode()).hexdigest()


@dataclass(frozen=True)
class AttemptWindow:
    """At most `attempts` per subject within a fixed window that starts at the first one."""

    name: str
    attempts: int
    window_seconds: int

    def key(self, subject: str) -> str:
        return _key(self.name, subject)

    async def count(self, subject: str) -> None:
        """Count one attempt; RATE_LIMITED (with the seconds left) once the window's allowance is used."""
        if outage("redis").down:
            return
        try:
            wait = await redis_client().eval(
                _FIXED_WINDOW, 1, self.key(subject), self.attempts, self.window_seconds
            )
        except (RedisError, RuntimeError) as exc:
            _not_checked(exc, f"rate limit {self.name}")
            return
        if int(wait) > 0:
            raise RateLimited(f"too many attempts; try again in {int(wait)} seconds", int(wait))


@dataclass(frozen=True)
class LoginBackoff:
    attempts: int
    base_seconds: int
    max_seconds: int
    window_seconds: int

    async def reserve(self, email: str, address: str) -> tuple[str, bool] | None:
        """Count this login before the password is checked: (its key, whether it is the address's own).

        RATE_LIMITED with retryAfterSeconds while this email (or, from an address the owner used before,
        this email at this address) must wait."""
        keys = (_key("known", email, address), _key("login", email), _key("login-at", email, address))
        if outage("redis").down:
            return None
        try:
            own, wait = await redis_client().eval(
                _LOGIN_BACKOFF,
                3,
                *keys,
                self.attempts,
                self.base_seconds,
                self.max_seconds,
                self.window_seconds,
            )
        except (RedisError, RuntimeError) as exc:
            _not_checked(exc, "login backoff")
            return None
        if int(wait) > 0:
            raise RateLimited(f"too many failed logins; try again in {int(wait)} seconds", int(wait))
        return (keys[2], True) if int(own) else (keys[1], False)


async def remember_owner_address(email: str, address: str, reserved: tuple[str, bool] | None = None) -> None:
    """The right password (or a mailed token) came from `address`: it becomes one of the owner's, and
    this try is forgiven (all of the address's own count; one try of the email's shared count)."""
    if outage("redis").down:
        return
    try:
        async with redis_client().pipeline(transaction=True) as pipe:
            if reserved is not None:
                key, own = reserved
                if own:
                    pipe.delete(key)
                else:
                    pipe.hincrby(key, "n", -1)
            pipe.set(_key("known", email, address), 1, ex=KNOWN_ADDRESS_SECONDS)
            await pipe.execute()
    except (RedisError, RuntimeError) as exc:
        _not_checked(exc, "login backoff clear")
