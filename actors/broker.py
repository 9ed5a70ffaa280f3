"""The Redis broker, shared by the API (which only sends) and the workers (which also consume)."""

from __future__ import annotations

import dramatiq
import redis
from dramatiq.middleware import Middleware

from actors.sturdy_redis import SturdyRedisBroker
from realtime.redis_options import RedisTimeouts
from services.kit import CHAIN_QUEUE


def configure_broker(
    redis_url: str,
    extra_middleware: list[Middleware] | None = None,
    timeouts: RedisTimeouts | None = None,
) -> SturdyRedisBroker:
    client = redis.Redis.from_url(redis_url, **(timeouts or RedisTimeouts()).sync_options())
    # the chain's failed links are the pump's to resend: no dead letters kept for them
    broker = SturdyRedisBroker(client=client, disposable_queues=frozenset({CHAIN_QUEUE}))
    for middleware in extra_middleware or []:
        broker.add_middleware(middleware)
    dramatiq.set_broker(broker)
    return broker
