"""One open subscription as the fan-out sees it: who watches, what it asked for, a bounded queue.

The hub puts event rows in; the subscription's resolver takes them out, or, once the subscription has
been handed to its socket's sender (`listen`), that sender does. A subscriber that falls `maxsize`
events behind is ended (its backlog dropped at once) instead of letting memory grow.
"""

from __future__ import annotations

import asyncio
import itertools
from dataclasses import dataclass
from enum import StrEnum
from typing import Any, Protocol

from models import Event

QUEUE_SIZE = 1000

_ids = itertools.count(1)


class EndReason(StrEnum):
    TOO_SLOW = "TOO_SLOW"
    PARTNERSHIP_ENDED = "PARTNERSHIP_ENDED"
    TOKEN_REVOKED = "TOKEN_REVOKED"
    SHUTDOWN = "SHUTDOWN"


class Listener(Protocol):
    def wake(self, subscriber: Subscriber) -> None:
        """`subscriber` has queued events or has ended: take them soon, without waiting here."""


class LiveFeed(Protocol):
    """What a subscription's events are to GraphQL, for whoever carries them once the resolver is done."""

    def payload(self, context: Any, row: Event) -> object:
        """The subscription field's value for one event (its root for the per-event execution)."""

    def ending(self, context: Any, reason: EndReason | None, last_sent: int) -> Exception:
        """The error the subscription ends with, saying from where to resume."""


@dataclass(frozen=True, slots=True)
class Handoff:
    """Yielded by a subscription resolver that is done with its replay: the socket's sender carries
    `subscriber` from here on, with `feed` (a shared object, nothing per subscription)."""

    subscriber: Subscriber
    feed: LiveFeed


class Subscriber:
    # one per open subscription, thousands per process: slots, and no per-subscriber queue machinery
    __slots__ = (
        "_end_taken",
        "_events",
        "_listener",
        "_maxsize",
        "_waiter",
        "dropped_users",
        "ended",
        "id",
        "last_sent",
        "task_id",
        "token_id",
        "user_id",
        "viewer_id",
    )

    def __init__(
        self,
        viewer_id: str,
        token_id: str,
        *,
        user_id: str | None = None,
        task_id: str | None = None,
        maxsize: int = QUEUE_SIZE,
    ) -> None:
        self.id = next(_ids)
        self.viewer_id = viewer_id
        self.token_id = token_id
        self.user_id = user_id
        self.task_id = task_id
        # users whose partnership with the viewer ended while this subscription was open
        self.dropped_users: frozenset[str] = frozenset()
        self.ended: EndReason | None = None
        self._events: list[Event] = []  # short in practice: the reader drains it on every wake-up
        self._waiter: asyncio.Future[None] | None = None
        self._listener: Listener | None = None
        self._end_taken = False
        self._maxsize = maxsize
        self.last_sent = 0  # the position of the last event its client was sent

    def wants(self, event: Event) -> bool:
        """The subscription's own narrowing; who may see what is decided by the hub."""
        user_id = str(event.user_id)
        if user_id in self.dropped_users:
            return False
        if self.user_id is not None and user_id != self.user_id:
            return False
        return self.task_id is None or str(event.task_id) == self.task_id

    def offer(self, event: Event) -> None:
        """Queue an event without waiting; a full queue ends the subscription instead."""
        if self.ended is not None:
            return
        if len(self._events) >= self._maxsize:
            self.end(EndReason.TOO_SLOW)
            return
        self._events.append(event)
        self._wake()

    def end(self, reason: EndReason) -> None:
        if self.ended is not None:
            return
        self.ended = reason
        self._events.clear()  # the backlog is freed now, not when the client reads it
        self._wake()

    def drop_user(self, user_id: str) -> None:
        """The viewer no longer partners for `user_id`: nothing more of theirs, and a narrowed stream ends."""
        self.dropped_users = self.dropped_users | {user_id}
        if self.user_id == user_id:
            self.end(EndReason.PARTNERSHIP_ENDED)

    def listen(self, listener: Listener) -> None:
        """From now on `listener` takes the events (`take_events`) instead of a waiting `next_event`."""
        self._listener = listener
        if self._events or self.ended is not None:
            listener.wake(self)

    def take_events(self) -> list[Event]:
        """Every queued event, oldest first; none once ended (then `ended` says why)."""
        if self.ended is not None:
            self._end_taken = True
            return []
        events, self._events = self._events, []
        return events

    async def next_event(self) -> Event | None:
        """The next queued event, or None once the subscription has been ended (see `ended`)."""
        while True:
            if self.ended is not None:
                self._end_taken = True
                return None
            if self._events:
                return self._events.pop(0)
            self._waiter = asyncio.get_running_loop().create_future()
            try:
                await self._waiter
            finally:
                self._waiter = None

    def _wake(self) -> None:
        if self._listener is not None:
            self._listener.wake(self)
        elif self._waiter is not None and not self._waiter.done():
            self._waiter.set_result(None)

    @property
    def backlog(self) -> int:
        """Queued events, plus the end mark until the reader has seen it."""
        return len(self._events) + (1 if self.ended is not None and not self._end_taken else 0)
