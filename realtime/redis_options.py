"""How every Redis client of ours connects: bounded waits, and one retry over a stale pooled connection.

After a Redis restart each pooled connection is dead until used once; without a retry the first command
on it (a /readyz ping, an event notice) fails although Redis is back.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import redis
from redis.asyncio.retry import Retry as AsyncRetry
from redis.backoff import ExponentialBackoff
from redis.retry import Retry

from settings import Settings

_RETRIES = 2
_BACKOFF = ExponentialBackoff(cap=0.5, base=0.05)


@dataclass(frozen=True)
class RedisTimeouts:
    connect_seconds: float = 2.0
    socket_seconds: float = 5.0

    @classmethod
    def of(cls, settings: Settings) -> RedisTimeouts:
        return cls(settings.redis_connect_timeout_seconds, settings.redis_socket_timeout_seconds)

    def _common(self) -> dict[str, Any]:
        return {
            "socket_connect_timeout": self.connect_seconds,
            "socket_timeout": self.socket_seconds,
            "retry_on_error": [redis.ConnectionError],
        }

    def sync_options(self) -> dict[str, Any]:
        return {**self._common(), "retry": Retry(_BACKOFF, _RETRIES)}

    def async_options(self) -> dict[str, Any]:
        return {**self._common(), "retry": AsyncRetry(_BACKOFF, _RETRIES)}
