"""The per-user event channels one pub/sub connection holds, brought in line with the watched users.

Changes go out in batched SUBSCRIBE / UNSUBSCRIBE commands (one command per `CHUNK` channels), sent from
the hub's channel task while its listener reads the same connection: redis-py's pub/sub commands only
write, their confirmations arrive as messages to the listener.
"""

from __future__ import annotations

from collections.abc import Collection
from typing import Any

from observability.metrics import LIVE_CHANNEL_CHANGES
from realtime.notices import events_channel

CHUNK = 500


class ChannelSet:
    def __init__(self, pubsub: Any) -> None:
        self._pubsub = pubsub
        self._subscribed: set[str] = set()  # user ids whose channel this connection holds

    async def sync(self, wanted: Collection[str]) -> None:
        wanted = set(wanted)
        joining = sorted(wanted - self._subscribed)
        leaving = sorted(self._subscribed - wanted)
        for start in range(0, len(joining), CHUNK):
            chunk = joining[start : start + CHUNK]
            await self._pubsub.subscribe(*(events_channel(u) for u in chunk))
            self._subscribed.update(chunk)
            LIVE_CHANNEL_CHANGES.labels("subscribe").inc(len(chunk))
        for start in range(0, len(leaving), CHUNK):
            chunk = leaving[start : start + CHUNK]
            await self._pubsub.unsubscribe(*(events_channel(u) for u in chunk))
            self._subscribed.difference_update(chunk)
            LIVE_CHANNEL_CHANGES.labels("unsubscribe").inc(len(chunk))
