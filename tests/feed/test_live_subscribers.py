"""A subscriber's bounded queue: overflow ends it and frees its backlog; removed partners stop at once."""

from __future__ import annotations

import uuid
from types import SimpleNamespace
from typing import cast

import pytest

from models import Event
from realtime.subscribers import EndReason, Subscriber

pytestmark = pytest.mark.unit


def event(position: int, user_id: str, task_id: str = "t") -> Event:
    # the queue reads only these attributes; a real row needs the ORM, which pure tests do without
    return cast(Event, SimpleNamespace(position=position, user_id=user_id, task_id=task_id))


async def test_a_full_queue_ends_the_subscriber_and_drops_its_backlog() -> None:
    subscriber = Subscriber("viewer", "token", maxsize=3)
    for position in range(1, 5):
        subscriber.offer(event(position, "viewer"))
    assert subscriber.ended is EndReason.TOO_SLOW
    assert subscriber.backlog == 1  # only the end mark is left
    assert await subscriber.next_event() is None
    subscriber.offer(event(9, "viewer"))
    assert subscriber.backlog == 0


async def test_events_come_out_in_the_order_they_were_offered() -> None:
    subscriber = Subscriber("viewer", "token")
    for position in (3, 4, 7):
        subscriber.offer(event(position, "viewer"))
    assert [(await subscriber.next_event()).position for _ in range(3)] == [3, 4, 7]  # type: ignore[union-attr]


async def test_a_removed_partnership_filters_the_user_and_ends_a_narrowed_subscriber() -> None:
    watched = str(uuid.uuid4())
    everyone = Subscriber("partner", "token")
    narrowed = Subscriber("partner", "token", user_id=watched)
    for subscriber in (everyone, narrowed):
        assert subscriber.wants(event(1, watched))
        subscriber.drop_user(watched)
        assert not subscriber.wants(event(2, watched))
    assert everyone.ended is None
    assert narrowed.ended is EndReason.PARTNERSHIP_ENDED
    assert await narrowed.next_event() is None


def test_a_task_filter_admits_only_that_task() -> None:
    subscriber = Subscriber("viewer", "token", task_id="a")
    assert subscriber.wants(event(1, "viewer", task_id="a"))
    assert not subscriber.wants(event(2, "viewer", task_id="b"))
