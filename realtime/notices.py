"""Wake-ups on Redis: 'events up to position N exist for user U', and control notices.

Redis carries wake-ups, not truth: a lost notice only delays delivery until the next one or the
listener's periodic catch-up, because readers always read the events table.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterable

from observability.metrics import EVENTS_PUBLISHED
from observability.outages import outage, report_failure
from realtime.redis_client import redis_client_or_none

log = logging.getLogger("proofloop.realtime")

EVENTS_CHANNEL_PREFIX = "proofloop:events:"
CONTROL_CHANNEL = "proofloop:control"


def events_channel(user_id: str) -> str:
    return f"{EVENTS_CHANNEL_PREFIX}{user_id}"


async def publish_positions(positions: Iterable[tuple[str, int]]) -> None:
    """Tell listeners that each user has events up to the given position."""
    latest: dict[str, int] = {}
    for user_id, position in positions:
        latest[user_id] = max(position, latest.get(user_id, 0))
        EVENTS_PUBLISHED.inc()
    client = redis_client_or_none()
    if not latest or client is None or outage("redis").down:  # listeners read the table every few seconds
        return
    try:
        async with client.pipeline(transaction=False) as pipe:
            for user_id, position in latest.items():
                pipe.publish(events_channel(user_id), str(position))
            await pipe.execute()
    except Exception as exc:
        message = "publishing event notices failed; listeners catch up from the table"
        report_failure(log, "event notice", exc, message, level=logging.WARNING)


async def publish_control(kind: str, **fields: str) -> None:
    """Access changes (a partnership ended, a token revoked) that open subscriptions must obey at once."""
    client = redis_client_or_none()
    if client is None:
        return
    try:
        await client.publish(CONTROL_CHANNEL, json.dumps({"kind": kind, **fields}))
    except Exception as exc:
        message = "publishing control notice %s failed"
        report_failure(log, "control notice", exc, message, kind, level=logging.WARNING)
