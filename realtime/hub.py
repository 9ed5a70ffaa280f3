"""The per-process fan-out: ONE Redis pub/sub connection, one reader of the events table, many subscribers.

Redis only says "look again". On a wake-up, on every (re)connection to Redis and every few seconds
regardless, the hub reads the rows after the last position it saw (once, for all subscribers) and
offers each to the subscribers allowed to see it, so lost notices and a Redis restart lose nothing.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import weakref
from collections.abc import Awaitable, Callable, Collection, Mapping
from datetime import UTC, datetime
from typing import Any, Protocol

import redis.asyncio as aioredis
from redis.exceptions import RedisError

from models import Event
from observability.metrics import OPEN_SUBSCRIPTIONS
from observability.outages import report_failure
from realtime.notices import CONTROL_CHANNEL, EVENTS_CHANNEL_PREFIX
from realtime.subscribers import EndReason, Subscriber
from services.partners import pushed_to

log = logging.getLogger("proofloop.realtime")

CATCH_UP_SECONDS = 2.0
RECONNECT_DELAY_SECONDS = 0.5
REVOKE_GRACE_SECONDS = 0.2
# a revoked token closes its sockets with graphql-transport-ws's own "Unauthorized" code
TOKEN_REVOKED_CLOSE_CODE = 4401

ReadAfter = Callable[[int], Awaitable[list[Event]]]
WatchersOf = Callable[[Collection[str]], Awaitable[Mapping[str, set[str]]]]
LatestPosition = Callable[[], Awaitable[int]]
TokenExpiry = Callable[[str], Awaitable[datetime | None]]  # None: revoked or gone


def _over_subscription_quota(limit: int) -> str:
    return f"at most {limit} open subscriptions per user: close one first"


class ClosableSocket(Protocol):
    async def close(self, code: int = 1000, reason: str | None = None) -> None: ...


class Hub:
    def __init__(
        self,
        redis_url: str,
        *,
        read_after: ReadAfter,
        watchers_of: WatchersOf,
        latest_position: LatestPosition,
        token_expiry: TokenExpiry | None = None,
        catch_up_seconds: float = CATCH_UP_SECONDS,
    ) -> None:
        self._redis_url = redis_url
        self._read_after = read_after
        self._watchers_of = watchers_of
        self._latest_position = latest_position
        self._token_expiry = token_expiry
        self._expiry_timers: dict[str, asyncio.Task[None]] = {}
        self._catch_up_seconds = catch_up_seconds
        self._by_viewer: dict[str, set[Subscriber]] = {}
        self._sockets: dict[str, weakref.WeakSet[ClosableSocket]] = {}
        self._open_sockets: dict[str, set[ClosableSocket]] = {}  # per viewer, for the connection quota
        self._admitted: dict[str, int] = {}  # per viewer: websocket subscriptions, from frame to end
        self._wake = asyncio.Event()
        self._tasks: list[asyncio.Task[None]] = []
        self._closing: set[asyncio.Task[None]] = set()
        self._redis_up = True
        self.last_position = 0
        self.registered_total = 0  # subscriptions registered since start (web/heap.py freezes after bursts)

    async def start(self) -> None:
        # history before start-up is replayed per subscription, never fanned out
        self.last_position = await self._latest_position()
        self._tasks = [
            asyncio.create_task(self._listen(), name="hub-listen"),
            asyncio.create_task(self._read_loop(), name="hub-read"),
        ]

    async def stop(self) -> None:
        for task in self._tasks:
            task.cancel()
        for task in self._tasks:
            with contextlib.suppress(asyncio.CancelledError):
                await task
        self._tasks = []
        for closing in [*self._closing, *self._expiry_timers.values()]:
            closing.cancel()
        for subscribers in list(self._by_viewer.values()):
            for subscriber in list(subscribers):
                subscriber.end(EndReason.SHUTDOWN)

    def add(self, subscriber: Subscriber, *, max_per_viewer: int | None = None) -> bool:
        """Register a subscriber; False (nothing registered) when its viewer already has `max_per_viewer`."""
        subscribers = self._by_viewer.setdefault(subscriber.viewer_id, set())
        if subscriber in subscribers:
            return True
        if max_per_viewer is not None and len(subscribers) >= max_per_viewer:
            return False
        subscribers.add(subscriber)
        OPEN_SUBSCRIPTIONS.inc()
        self.registered_total += 1
        return True

    def subscriptions_of(self, viewer_id: str) -> int:
        return len(self._by_viewer.get(viewer_id, ()))

    def subscription_refusal(self, viewer_id: str, limit: int) -> str | None:
        """Why one more subscription of `viewer_id` is refused (PROOFLOOP_MAX_SUBSCRIPTIONS_PER_USER)."""
        if self.subscriptions_of(viewer_id) < limit:
            return None
        return _over_subscription_quota(limit)

    def admit_subscription(self, viewer_id: str, limit: int) -> str | None:
        """Count a websocket subscription of `viewer_id` from its frame on, before it is validated or run, so
        a burst of frames is refused before each costs an operation; or say why not. The registered count
        (other transports) still applies, and the resolver's `add` stays the exact check."""
        in_use = max(self._admitted.get(viewer_id, 0), self.subscriptions_of(viewer_id))
        if in_use >= limit:
            return _over_subscription_quota(limit)
        self._admitted[viewer_id] = self._admitted.get(viewer_id, 0) + 1
        return None

    def release_subscription(self, viewer_id: str) -> None:
        """The admitted subscription's operation ended (or never started)."""
        left = self._admitted.get(viewer_id, 0) - 1
        if left > 0:
            self._admitted[viewer_id] = left
        else:
            self._admitted.pop(viewer_id, None)

    def remove(self, subscriber: Subscriber) -> None:
        subscribers = self._by_viewer.get(subscriber.viewer_id)
        if subscribers is not None and subscriber in subscribers:
            subscribers.discard(subscriber)
            OPEN_SUBSCRIPTIONS.dec()
            if not subscribers:
                del self._by_viewer[subscriber.viewer_id]

    def open_socket(self, viewer_id: str, socket: ClosableSocket, *, max_per_viewer: int) -> bool:
        """Count a viewer's open websocket; False (not counted) when they already have `max_per_viewer`."""
        sockets = self._open_sockets.setdefault(viewer_id, set())
        if socket not in sockets and len(sockets) >= max_per_viewer:
            return False
        sockets.add(socket)
        return True

    def close_socket(self, viewer_id: str, socket: ClosableSocket) -> None:
        sockets = self._open_sockets.get(viewer_id)
        if sockets is not None:
            sockets.discard(socket)
            if not sockets:
                del self._open_sockets[viewer_id]

    def track_socket(self, token_id: str, socket: ClosableSocket, expires_at: datetime | None = None) -> None:
        """Remember a socket opened with `token_id`, so revoking the token closes it (weakly held), and so
        does its expiry, at that moment."""
        self._sockets.setdefault(token_id, weakref.WeakSet()).add(socket)
        if expires_at is not None and self._token_expiry is not None and token_id not in self._expiry_timers:
            self._expiry_timers[token_id] = asyncio.create_task(self._expire(token_id, expires_at))

    async def _expire(self, token_id: str, expires_at: datetime) -> None:
        """Sleep until the token's expiry; if it was not extended meanwhile (sliding), end its sockets."""
        assert self._token_expiry is not None
        try:
            while self._sockets.get(token_id):
                await asyncio.sleep(max(0.0, (expires_at - datetime.now(UTC)).total_seconds()))
                try:
                    latest = await self._token_expiry(token_id)
                except Exception as exc:
                    report_failure(
                        log,
                        "token expiry read",
                        exc,
                        "reading a token's expiry failed; retrying",
                        level=logging.WARNING,
                    )
                    await asyncio.sleep(self._catch_up_seconds)
                    continue
                if latest is None or latest <= datetime.now(UTC):
                    await self._revoke_token(token_id)
                    return
                expires_at = latest
        finally:
            self._expiry_timers.pop(token_id, None)

    async def catch_up(self) -> None:
        """Read every row after the last position seen, a bounded batch at a time, and fan each out once."""
        while True:
            rows = await self._read_after(self.last_position)
            if not rows:
                return
            await self._fan_out(rows)
            self.last_position = max(self.last_position, rows[-1].position or 0)

    async def _fan_out(self, rows: list[Event]) -> None:
        # partnerships are read from the table per batch: a removal whose notice was lost still applies
        watchers = await self._watchers_of({str(row.user_id) for row in rows})
        for row in rows:
            if (row.position or 0) <= self.last_position:
                continue
            owner = str(row.user_id)
            for viewer_id in pushed_to(row, watchers.get(owner, ())):
                for subscriber in list(self._by_viewer.get(viewer_id, ())):
                    if subscriber.wants(row):
                        subscriber.offer(row)

    async def _read_loop(self) -> None:
        while True:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._wake.wait(), timeout=self._catch_up_seconds)
            self._wake.clear()
            self._sockets = {token: sockets for token, sockets in self._sockets.items() if sockets}
            try:
                await self.catch_up()
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                report_failure(
                    log,
                    "event read",
                    exc,
                    "reading new events failed; retrying on the next wake-up",
                    level=logging.WARNING,
                )

    async def _listen(self) -> None:
        while True:
            client = aioredis.Redis.from_url(self._redis_url, socket_connect_timeout=5)
            pubsub = client.pubsub()
            try:
                await pubsub.psubscribe(f"{EVENTS_CHANNEL_PREFIX}*")
                await pubsub.subscribe(CONTROL_CHANNEL)
                while True:
                    message = await pubsub.get_message(timeout=self._catch_up_seconds)
                    if message is not None:
                        await self._on_message(message)
            except (RedisError, OSError) as exc:
                if self._redis_up:  # once per outage, not once per retry
                    log.warning(
                        "redis pub/sub connection lost (%s); reading the table every %.0f s meanwhile",
                        exc,
                        self._catch_up_seconds,
                    )
                self._redis_up = False
            finally:
                with contextlib.suppress(Exception):
                    await pubsub.aclose()  # type: ignore[no-untyped-call]
                with contextlib.suppress(Exception):
                    await client.aclose()
            self._wake.set()  # whatever was published while disconnected is in the table
            await asyncio.sleep(RECONNECT_DELAY_SECONDS)

    async def _on_message(self, message: dict[str, Any]) -> None:
        kind = message.get("type")
        if kind in ("subscribe", "psubscribe"):
            # also sent when redis-py silently re-subscribes after a reconnect: notices may have been lost
            if not self._redis_up:
                log.info("redis pub/sub connection restored")
            self._redis_up = True
            self._wake.set()
        elif kind == "pmessage":
            self._wake.set()
        elif kind == "message":
            await self._on_control(message.get("data"))

    async def _on_control(self, data: object) -> None:
        try:
            notice = json.loads(data if isinstance(data, (str, bytes)) else "")
        except ValueError:
            log.warning("ignoring a malformed control notice %r", data)
            return
        if notice.get("kind") == "partnership_removed":
            for subscriber in list(self._by_viewer.get(str(notice.get("partner_id")), ())):
                subscriber.drop_user(str(notice.get("user_id")))
        elif notice.get("kind") == "token_revoked":
            await self._revoke_token(str(notice.get("token_id")))

    async def _revoke_token(self, token_id: str) -> None:
        for subscribers in list(self._by_viewer.values()):
            for subscriber in list(subscribers):
                if subscriber.token_id == token_id:
                    subscriber.end(EndReason.TOKEN_REVOKED)
        sockets = list(self._sockets.pop(token_id, ()))
        if sockets:
            task = asyncio.create_task(self._close_sockets(sockets))
            self._closing.add(task)
            task.add_done_callback(self._closing.discard)

    async def _close_sockets(self, sockets: list[ClosableSocket]) -> None:
        # a moment first, so the ended subscriptions can tell their clients why before the socket goes
        await asyncio.sleep(REVOKE_GRACE_SECONDS)
        for socket in sockets:
            with contextlib.suppress(Exception):  # already closed by its client
                await socket.close(code=TOKEN_REVOKED_CLOSE_CODE, reason="token revoked")
