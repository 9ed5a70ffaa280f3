"""Whom one API process's viewers watch: counted per user, joins remembered, channels lingering."""

from __future__ import annotations

import pytest

from realtime.watched import WatchedUsers

pytestmark = pytest.mark.unit


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_a_user_watched_by_two_viewers_stays_until_both_leave() -> None:
    watched = WatchedUsers(linger_seconds=30)
    assert watched.set_viewer("v1", {"owner"}, position=5) == {"v1", "owner"}
    assert watched.set_viewer("v2", {"owner"}, position=7) == {"v2"}  # owner was already read here
    watched.drop_viewer("v1")
    assert watched.users == {"v2", "owner"}
    watched.drop_viewer("v2")
    assert watched.users == set()


def test_joins_carry_the_position_they_happened_at_and_are_taken_once() -> None:
    watched = WatchedUsers(linger_seconds=30)
    watched.set_viewer("v1", (), position=5)
    watched.add_users("v1", {"owner"}, position=9)
    assert watched.take_joined() == {"v1": 5, "owner": 9}
    assert watched.take_joined() == {}


def test_a_user_who_leaves_before_being_read_is_not_owed_anything() -> None:
    watched = WatchedUsers(linger_seconds=30)
    watched.set_viewer("v1", {"owner"}, position=5)
    watched.remove_user("v1", "owner")
    assert watched.take_joined() == {"v1": 5}


def test_a_viewer_never_stops_watching_themselves() -> None:
    watched = WatchedUsers(linger_seconds=30)
    watched.set_viewer("v1", {"owner"}, position=0)
    watched.remove_user("v1", "v1")
    assert watched.users == {"v1", "owner"}


def test_a_channel_lingers_after_its_last_viewer_leaves_then_goes() -> None:
    clock = Clock()
    watched = WatchedUsers(linger_seconds=30, clock=clock)
    watched.set_viewer("v1", {"owner"}, position=0)
    watched.drop_viewer("v1")
    clock.now = 29
    assert watched.channels_wanted() == {"v1", "owner"}  # a quick return costs no SUBSCRIBE
    watched.set_viewer("v1", (), position=0)
    clock.now = 60
    assert watched.channels_wanted() == {"v1"}
