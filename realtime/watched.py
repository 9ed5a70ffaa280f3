"""Whose events one API process needs: the users its viewers watch (themselves and whom they partner for).

The hub subscribes to each watched user's channel and reads only their rows. A user no viewer here watches
any more keeps their channel for `linger_seconds`, so a client opening and closing subscriptions in a loop
costs Redis at most one SUBSCRIBE and one UNSUBSCRIBE per user in that time. A user who starts being
watched is remembered with the hub's position at that moment: a read already under way did not include
them, so the hub reads what it owes them from there (see Hub.catch_up).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Collection


class WatchedUsers:
    def __init__(self, linger_seconds: float, clock: Callable[[], float] = time.monotonic) -> None:
        self._linger = linger_seconds
        self._clock = clock
        self._by_viewer: dict[str, frozenset[str]] = {}
        self._viewers_of: dict[str, int] = {}  # per watched user: how many viewers here watch them
        self._idle_since: dict[str, float] = {}  # no longer watched; their channel lingers
        self._joined: dict[str, int] = {}  # newly watched user -> the hub's position when they joined

    @property
    def viewers(self) -> frozenset[str]:
        return frozenset(self._by_viewer)

    @property
    def users(self) -> frozenset[str]:
        """The users whose rows the hub reads now."""
        return frozenset(self._viewers_of)

    def of(self, viewer_id: str) -> frozenset[str]:
        return self._by_viewer.get(viewer_id, frozenset())

    def set_viewer(self, viewer_id: str, users: Collection[str], position: int) -> frozenset[str]:
        """`viewer_id` watches exactly `users` (and themselves); returns the users newly watched here."""
        wanted = frozenset(users) | {viewer_id}
        before = self._by_viewer.get(viewer_id, frozenset())
        self._by_viewer[viewer_id] = wanted
        for user_id in before - wanted:
            self._unwatch(user_id)
        joined = frozenset(u for u in wanted - before if self._watch(u))
        for user_id in joined:
            self._joined.setdefault(user_id, position)
        return joined

    def add_users(self, viewer_id: str, users: Collection[str], position: int) -> frozenset[str]:
        return self.set_viewer(viewer_id, self.of(viewer_id) | frozenset(users), position)

    def remove_user(self, viewer_id: str, user_id: str) -> None:
        if viewer_id in self._by_viewer and user_id != viewer_id:
            self.set_viewer(viewer_id, self.of(viewer_id) - {user_id}, 0)

    def drop_viewer(self, viewer_id: str) -> None:
        for user_id in self._by_viewer.pop(viewer_id, frozenset()):
            self._unwatch(user_id)

    def take_joined(self) -> dict[str, int]:
        """The users who started being watched since the last call, each with its position then."""
        joined, self._joined = self._joined, {}
        return {u: p for u, p in joined.items() if u in self._viewers_of}

    def channels_wanted(self) -> frozenset[str]:
        """The users whose channel should be subscribed: the watched ones, and those still lingering."""
        now = self._clock()
        self._idle_since = {u: t for u, t in self._idle_since.items() if now - t < self._linger}
        return frozenset(self._viewers_of) | frozenset(self._idle_since)

    def _watch(self, user_id: str) -> bool:
        count = self._viewers_of.get(user_id, 0)
        self._viewers_of[user_id] = count + 1
        self._idle_since.pop(user_id, None)
        return count == 0

    def _unwatch(self, user_id: str) -> None:
        count = self._viewers_of.get(user_id, 0) - 1
        if count > 0:
            self._viewers_of[user_id] = count
            return
        self._viewers_of.pop(user_id, None)
        self._joined.pop(user_id, None)
        self._idle_since[user_id] = self._clock()
