"""The process's general async Redis client: one pool for notices, rate limits and health checks.

Opened and closed by whatever runs the process: the API's lifespan (app.py) and the worker's
`WorkerRedis` middleware (actors/redis_client.py). Everything else asks `redis_client()` for it; the
hub's pub/sub connection and Dramatiq's broker client are separate on purpose.
"""

from __future__ import annotations

import redis.asyncio as aioredis

from realtime.redis_options import RedisTimeouts

_client: aioredis.Redis | None = None


def open_redis(redis_url: str, timeouts: RedisTimeouts | None = None) -> aioredis.Redis:
    """Open the process's client (a pool: connections are made on first use)."""
    global _client
    _client = aioredis.Redis.from_url(redis_url, **(timeouts or RedisTimeouts()).async_options())
    return _client


async def close_redis() -> None:
    global _client
    if _client is not None:
        client, _client = _client, None
        await client.aclose()


def redis_client() -> aioredis.Redis:
    """The open client; RuntimeError when this process opened none (callers treat it as Redis down)."""
    if _client is None:
        raise RuntimeError("no Redis client is open in this process")
    return _client


def redis_client_or_none() -> aioredis.Redis | None:
    return _client
