"""Wake-ups on Redis: 'events up to position N exist for user U', and control notices.

Redis carries wake-ups, not truth: a lost notice only delays delivery until the next one or the
listener's periodic catch-up, because readers always read the events table.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterable

import redis.asyncio as aioredis

from observability.metrics import EVENTS_PUBLISHED
from realtime.redis_options import RedisTimeouts

log = logging.getLogger("proofloop.realtime")

EVENTS_CHANNEL_PREFIX = "proofloop:events:"
CONTROL_CHANNEL = "proofloop:control"

_client: aioredis.Redis | None = None


def configure(redis_url: str, timeouts: RedisTimeouts | None = None) -> aioredis.Redis:
    global _client
    _client = aioredis.Redis.from_url(redis_url, **(timeouts or RedisTimeouts()).async_options())
    return _client


async def close() -> None:
    global _client
    if _client is not None:
        await _client.aclose()
        _client = None


def client() -> aioredis.Redis:
    if _client is None:
        raise RuntimeError("realtime.notices is not configured")
    return _client


def events_channel(user_id: str) -> str:
    return f"{EVENTS_CHANNEL_PREFIX}{user_id}"


async def publish_positions(positions: Iterable[tuple[str, int]]) -> None:
    """Tell listeners that each user has events up to the given position."""
    latest: dict[str, int] = {}
    for user_id, position in positions:
        latest[user_id] = max(position, latest.get(user_id, 0))
        EVENTS_PUBLISHED.inc()
    if not latest or _client is None:
        return
    try:
        async with _client.pipeline(transaction=False) as pipe:
            for user_id, position in latest.items():
                pipe.publish(events_channel(user_id), str(position))
            await pipe.execute()
    except Exception:
        log.warning("publishing event notices failed; listeners catch up from the table", exc_info=True)


async def publish_control(kind: str, **fields: str) -> None:
    """Access changes (a partnership ended, a token revoked) that open subscriptions must obey at once."""
    if _client is None:
        return
    try:
        await _client.publish(CONTROL_CHANNEL, json.dumps({"kind": kind, **fields}))
    except Exception:
        log.warning("publishing control notice %s failed", kind, exc_info=True)
