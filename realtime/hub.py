"""The per-process fan-out: ONE Redis pub/sub connection, one reader of the events table, many subscribers.

Redis only says "look again". On a wake-up, on every (re)connection to Redis and every few seconds
regardless, the hub reads the rows after the last position it saw (once, for all subscribers) and
offers each to the subscribers allowed to see it, so lost notices and a Redis restart lose nothing.

With `live_notices=per_user` (the default) the process takes only what its viewers need: it SUBSCRIBEs
to the channel of each user they watch (realtime/watched.py) and reads only those users' rows; with
`all`, every notice (a pattern subscription) and every row, as before sharding.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import weakref
from collections.abc import Awaitable, Callable, Collection, Mapping
from datetime import UTC, datetime
from typing import Any, Literal, Protocol

import redis.asyncio as aioredis
from redis.exceptions import RedisError

from models import Event
from observability.metrics import (
    LIVE_NOTICES,
    LIVE_ROWS_READ,
    LIVE_VIEWERS,
    LIVE_WATCHED_USERS,
    OPEN_SUBSCRIPTIONS,
)
from observability.outages import report_failure
from realtime.channels import ChannelSet
from realtime.notices import CONTROL_CHANNEL, EVENTS_CHANNEL_PREFIX
from realtime.subscribers import EndReason, Subscriber
from realtime.watched import WatchedUsers
from services.partners import pushed_to

log = logging.getLogger("proofloop.realtime")

CATCH_UP_SECONDS = 2.0
RECONNECT_DELAY_SECONDS = 0.5
REVOKE_GRACE_SECONDS = 0.2
# a revoked token closes its sockets with graphql-transport-ws's own "Unauthorized" code
TOKEN_REVOKED_CLOSE_CODE = 4401

READ_BATCH = 500
# no upper bound: `all` reads whatever has a position
NO_LIMIT = 2**63 - 1

# (after, upto, users or None for everyone's, limit): rows with after < position <= upto, oldest first
ReadBetween = Callable[[int, int, Collection[str] | None, int], Awaitable[list[Event]]]
WatchedBy = Callable[[Collection[str]], Awaitable[Mapping[str, Collection[str]]]]
LiveNotices = Literal["per_user", "all"]
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
        read_between: ReadBetween,
        watchers_of: WatchersOf,
        watched_by: WatchedBy,
        latest_position: LatestPosition,
        token_expiry: TokenExpiry | None = None,
        catch_up_seconds: float = CATCH_UP_SECONDS,
        notices: LiveNotices = "per_user",
        linger_seconds: float = 30.0,
        refresh_seconds: float = 30.0,
        read_batch: int = READ_BATCH,
    ) -> None:
        self._redis_url = redis_url
        self._read_between = read_between
        self._watched_by = watched_by
        self._notices = notices
        self._watched = WatchedUsers(linger_seconds)
        self._channels: ChannelSet | None = None  # of the live pub/sub connection, while there is one
        self._channels_changed = asyncio.Event()
        self._linger_seconds = linger_seconds
        self._refresh_seconds = refresh_seconds
        self._refresh_due = False
        self._read_batch = read_batch
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
        if self._notices == "per_user":
            self._tasks.append(asyncio.create_task(self._channel_loop(), name="hub-channels"))

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

    def add(
        self, subscriber: Subscriber, *, watches: Collection[str] = (), max_per_viewer: int | None = None
    ) -> bool:
        """Register a subscriber whose viewer watches `watches` (besides themselves); False (nothing
        registered) when its viewer already has `max_per_viewer`."""
        subscribers = self._by_viewer.setdefault(subscriber.viewer_id, set())
        if subscriber in subscribers:
            return True
        if max_per_viewer is not None and len(subscribers) >= max_per_viewer:
            if not subscribers:
                del self._by_viewer[subscriber.viewer_id]
            return False
        subscribers.add(subscriber)
        OPEN_SUBSCRIPTIONS.inc()
        self.registered_total += 1
        # a union: a partnership accepted meanwhile (its notice) may be newer than the caller's access
        self._watch(self._watched.add_users(subscriber.viewer_id, watches, self.last_position))
        return True

    def _watch(self, joined: Collection[str]) -> None:
        """After the watched users changed: new ones are read at once, channels follow."""
        if joined and self._notices == "per_user":
            self._wake.set()
        self._channels_changed.set()
        LIVE_VIEWERS.set(len(self._by_viewer))
        LIVE_WATCHED_USERS.set(len(self._watched.users))

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
                self._watched.drop_viewer(subscriber.viewer_id)
                self._watch(())

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
        """Read the rows after the last position seen (of the watched users, with `per_user`), a bounded
        batch at a time, and fan each out once."""
        while True:
            if self._notices == "all":
                rows = await self._read(self.last_position, NO_LIMIT, None)
                if not rows:
                    return
                await self._fan_out(rows)
                self.last_position = max(self.last_position, rows[-1].position or 0)
                continue
            # every row up to `upto` is visible: positions are given in commit order, in one step
            upto = await self._latest_position()
            owed = self._watched.take_joined()
            users = self._watched.users
            rows = await self._read(self.last_position, upto, users) if users else []
            full = len(rows) >= self._read_batch
            reached = (rows[-1].position or 0) if full else upto
            covered, floor = set(users), self.last_position
            while owed:
                rows += await self._read_owed(owed, covered, floor, reached)
                covered |= owed.keys()
                # whoever joined during these reads is in no snapshot yet
                owed = {u: p for u, p in self._watched.take_joined().items() if u not in covered}
            await self._fan_out(sorted({row.position: row for row in rows}.values(), key=_position))
            self.last_position = max(self.last_position, reached)
            if not full:
                return

    async def _read(self, after: int, upto: int, users: Collection[str] | None) -> list[Event]:
        rows = await self._read_between(after, upto, users, self._read_batch)
        LIVE_ROWS_READ.inc(len(rows))
        return rows

    async def _read_owed(
        self, owed: Mapping[str, int], covered: Collection[str], floor: int, reached: int
    ) -> list[Event]:
        """The rows of users who started being watched at `owed[user]` that no read so far included: up
        to `floor` for those in the read that covered (`floor`, `reached`], up to `reached` for others."""
        upper = {u: floor if u in covered else reached for u in owed}
        wanted = {u for u, p in owed.items() if p < upper[u]}
        if not wanted:
            return []
        rows: list[Event] = []
        after, upto = min(owed[u] for u in wanted), max(upper[u] for u in wanted)
        while True:
            batch = await self._read(after, upto, wanted)
            rows += [r for r in batch if owed[str(r.user_id)] < (r.position or 0) <= upper[str(r.user_id)]]
            if len(batch) < self._read_batch:
                return rows
            after = batch[-1].position or after

    async def _fan_out(self, rows: list[Event]) -> None:
        if not rows:
            return
        # partnerships are read from the table per batch: a removal whose notice was lost still applies
        watchers = await self._watchers_of({str(row.user_id) for row in rows})
        for row in rows:
            owner = str(row.user_id)
            for viewer_id in pushed_to(row, watchers.get(owner, ())):
                for subscriber in list(self._by_viewer.get(viewer_id, ())):
                    if subscriber.wants(row):
                        subscriber.offer(row)

    async def _read_loop(self) -> None:
        loop = asyncio.get_running_loop()
        refreshed = loop.time()
        while True:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._wake.wait(), timeout=self._catch_up_seconds)
            self._wake.clear()
            self._sockets = {token: sockets for token, sockets in self._sockets.items() if sockets}
            try:
                refresh_due = self._refresh_due or refreshed + self._refresh_seconds <= loop.time()
                if self._notices == "per_user" and refresh_due:
                    self._refresh_due = False
                    refreshed = loop.time()
                    await self._refresh_watched()
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
                if self._notices == "all":
                    await pubsub.psubscribe(f"{EVENTS_CHANNEL_PREFIX}*")
                await pubsub.subscribe(CONTROL_CHANNEL)
                self._channels = ChannelSet(pubsub)
                self._channels_changed.set()
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
                self._channels = None
                with contextlib.suppress(Exception):
                    await pubsub.aclose()
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
                self._refresh_due = True  # a partnership's notice may have been lost meanwhile
            self._redis_up = True
            self._wake.set()
        elif kind == "pmessage" or (kind == "message" and _channel(message) != CONTROL_CHANNEL):
            LIVE_NOTICES.inc()
            self._wake.set()
        elif kind == "message":
            await self._on_control(message.get("data"))

    async def _channel_loop(self) -> None:
        """Keep the connection's per-user channels in line with the watched users (and lingering ones)."""
        while True:
            with contextlib.suppress(TimeoutError):
                # also wakes to let lingering channels go (never spinning when the linger is 0)
                timeout = max(self._linger_seconds / 2, self._catch_up_seconds)
                await asyncio.wait_for(self._channels_changed.wait(), timeout=timeout)
            self._channels_changed.clear()
            channels = self._channels
            if channels is None:
                continue  # the listener sets the flag again once it holds a new connection
            try:
                await channels.sync(self._watched.channels_wanted())
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # the listener reconnects, then every channel is subscribed anew
                log.warning("updating the event channels failed (%s)", exc)

    async def _refresh_watched(self) -> None:
        """Re-read whom the viewers here watch: the backstop for a lost partnership notice. Users added
        while the read ran (a notice newer than it) are kept."""
        before = {viewer: self._watched.of(viewer) for viewer in self._watched.viewers}
        if not before:
            return
        fresh = await self._watched_by(list(before))
        joined: set[str] = set()
        for viewer, had in before.items():
            if viewer not in self._watched.viewers:
                continue  # gone meanwhile
            now_watched = frozenset(fresh.get(viewer, ())) | {viewer}
            kept = self._watched.of(viewer) - (had - now_watched)
            joined |= self._watched.set_viewer(viewer, kept | now_watched, self.last_position)
        self._watch(joined)

    async def _on_control(self, data: object) -> None:
        try:
            notice = json.loads(data if isinstance(data, (str, bytes)) else "")
        except ValueError:
            log.warning("ignoring a malformed control notice %r", data)
            return
        if notice.get("kind") == "partnership_removed":
            user_id, partner_id = str(notice.get("user_id")), str(notice.get("partner_id"))
            for subscriber in list(self._by_viewer.get(partner_id, ())):
                subscriber.drop_user(user_id)
            self._watched.remove_user(partner_id, user_id)
            self._watch(())
        elif notice.get("kind") == "partnership_accepted":
            user_id, partner_id = str(notice.get("user_id")), str(notice.get("partner_id"))
            if partner_id in self._by_viewer:  # its open subscriptions now carry the user's events
                self._watch(self._watched.add_users(partner_id, {user_id}, self.last_position))
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


def _position(event: Event) -> int:
    return event.position or 0


def _channel(message: Mapping[str, Any]) -> str:
    channel = message.get("channel")
    return channel.decode() if isinstance(channel, bytes) else str(channel)
