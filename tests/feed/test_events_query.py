"""`events`: the history a viewer may see, paged forward and back, over real HTTP.

Event rows are written straight into the outbox without a position, as a crashed process would leave
them; the worker's pump positions them, which is also what makes them readable.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import asyncpg
import pytest

from harness.proofloop import ApiClient, GraphQLFailure, WorkerProcess, event_position
from tests.support.events_query import TYPES, task_with_history
from tests.support.live import make_partners

EVENTS = """query($after: ID, $first: Int, $before: ID, $last: Int, $userId: ID, $taskId: ID) {
  events(after: $after, first: $first, before: $before, last: $last, userId: $userId, taskId: $taskId) {
    id type taskTitle user { id } task { id }
  }
}"""


@pytest.fixture
async def db(database_url: str) -> AsyncIterator[asyncpg.Connection]:
    conn = await asyncpg.connect(database_url)
    yield conn
    await conn.close()


async def ids(api: ApiClient, token: str, **variables: Any) -> list[str]:
    return [e["id"] for e in (await api.execute(EVENTS, variables, token=token))["events"]]


async def test_partners_see_the_history_of_those_they_partner_for_and_nobody_else(
    api: ApiClient, db: asyncpg.Connection, worker: WorkerProcess
) -> None:
    owner_token, owner = await api.register()
    other_token, other = await api.register()
    partner_token, partner = await api.register()
    stranger_token, _ = await api.register()
    await make_partners(api, owner_token, partner_token, partner["email"])
    await make_partners(api, other_token, partner_token, partner["email"])
    task_id, owner_events = await task_with_history(api, db, owner_token, owner, "Read")
    _, other_events = await task_with_history(api, db, other_token, other, "Swim")

    assert await ids(api, owner_token) == owner_events  # own history, oldest first
    assert await ids(api, partner_token) == sorted(owner_events + other_events, key=event_position)
    assert await ids(api, partner_token, userId=other["id"]) == other_events
    assert await ids(api, partner_token, taskId=task_id) == owner_events
    assert await ids(api, stranger_token) == []
    for variables in ({"userId": owner["id"]}, {"taskId": task_id}, {"userId": "not-an-id"}):
        with pytest.raises(GraphQLFailure) as failure:
            await ids(api, stranger_token, **variables)
        assert failure.value.code == "NOT_FOUND"

    events = (await api.execute(EVENTS, {"first": 1}, token=partner_token))["events"]
    assert events == [{"id": owner_events[0], "type": TYPES[0], "taskTitle": "Read", "user": {"id": owner["id"]},
                       "task": {"id": task_id}}]  # fmt: skip


async def test_pages_forward_with_after_and_back_from_the_newest_with_last(
    api: ApiClient, db: asyncpg.Connection, worker: WorkerProcess
) -> None:
    token, user = await api.register()
    _, events = await task_with_history(api, db, token, user, "Write")

    assert await ids(api, token, first=2) == events[:2]
    assert await ids(api, token, after=events[1], first=2) == events[2:4]
    assert await ids(api, token, after=events[-1]) == []
    assert await ids(api, token, last=2) == events[-2:]  # the newest, still oldest first
    assert await ids(api, token, before=events[-2], last=3) == events[-5:-2]
    assert await ids(api, token, before=events[2]) == events[:2]
    assert await ids(api, token, after=events[0], before=events[4]) == events[1:4]


@pytest.mark.parametrize(
    ("variables", "field"),
    [
        ({"first": 101}, "first"),
        ({"last": 101}, "last"),
        ({"first": -1}, "first"),
        ({"after": "abc"}, "after"),
    ],
)
async def test_bad_page_arguments_name_the_field(
    api: ApiClient, variables: dict[str, Any], field: str
) -> None:
    token, _ = await api.register()
    with pytest.raises(GraphQLFailure) as failure:
        await ids(api, token, **variables)
    assert (failure.value.code, failure.value.field) == ("BAD_USER_INPUT", field)
