"""Relay connections over real HTTP: every list pages both ways, each row once, in order, with true pageInfo.

Each connection is walked forward (`first`/`after`) and backward (`last`/`before`) in pages of 3 over 7 or
more rows; the server counts its statements (PROOFLOOP_COUNT_STATEMENTS), so a page of 7 must cost what a
page of 1 does. Access is the list's own: a partner pages only what they may see.
"""

from __future__ import annotations

import base64
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import asyncpg
import pytest

from harness.mailbox import Mailbox
from harness.proofloop import (
    BERLIN,
    ApiClient,
    GraphQLFailure,
    ServerProcess,
    WorkerProcess,
    create_open_task,
    free_port,
    partner_pair,
    row_key,
)
from services.kit.ids import global_id
from tests.support.events_query import task_with_history
from tests.support.read_statements import add_history, counted, review_requests

SIZE = 3
PAGE = "edges { cursor node { id } } pageInfo { hasNextPage hasPreviousPage startCursor endCursor }"
ARGUMENTS = "first: $first, after: $after, last: $last, before: $before"
VARIABLES = "$first: Int, $after: String, $last: Int, $before: String"

Fetch = Callable[[dict[str, Any]], Awaitable[tuple[dict[str, Any], int]]]


@pytest.fixture(scope="module")
def counting_server(service_env: dict[str, str]) -> Iterator[ServerProcess]:
    with ServerProcess({**service_env, "PROOFLOOP_COUNT_STATEMENTS": "true"}, port=free_port()) as proc:
        yield proc


@pytest.fixture
async def paging_api(counting_server: ServerProcess, worker: WorkerProcess, mailbox: Mailbox) -> ApiClient:
    return ApiClient(counting_server.url, mailbox)


@pytest.fixture
async def db(database_url: str) -> AsyncIterator[asyncpg.Connection]:
    conn = await asyncpg.connect(database_url)
    yield conn
    await conn.close()


def root(api: ApiClient, token: str, field: str, extra: str = "", user_id: str | None = None) -> Fetch:
    """Pages of a root connection field, as `token` sees them (of `user_id`'s rows when given)."""
    narrowed = "" if user_id is None else ", userId: $userId"
    declared = "" if user_id is None else ", $userId: ID"
    document = f"query({VARIABLES}{declared}) {{ {field}({ARGUMENTS}{extra}{narrowed}) {{ {PAGE} }} }}"
    fixed = {} if user_id is None else {"userId": user_id}

    async def fetch(variables: dict[str, Any]) -> tuple[dict[str, Any], int]:
        data, statements = await counted(api.url, document, token, **fixed, **variables)
        return data[field], statements

    return fetch


def nested(api: ApiClient, token: str, parent: str, parent_id: str, field: str) -> Fetch:
    """Pages of a connection under one object (`task(id:)`, `instance(id:)`)."""
    document = f"query($id: ID!, {VARIABLES}) {{ {parent}(id: $id) {{ {field}({ARGUMENTS}) {{ {PAGE} }} }} }}"

    async def fetch(variables: dict[str, Any]) -> tuple[dict[str, Any], int]:
        data, statements = await counted(api.url, document, token, id=parent_id, **variables)
        return data[parent][field], statements

    return fetch


def node_ids(page: dict[str, Any]) -> list[str]:
    return [edge["node"]["id"] for edge in page["edges"]]


def check_cursors(page: dict[str, Any]) -> None:
    cursors = [edge["cursor"] for edge in page["edges"]]
    assert page["pageInfo"]["startCursor"] == (cursors[0] if cursors else None)
    assert page["pageInfo"]["endCursor"] == (cursors[-1] if cursors else None)
    # opaque: no cursor is the node's id or a bare position
    for cursor, node in zip(cursors, node_ids(page), strict=True):
        assert cursor != node and not cursor.isdigit()


async def walk_forward(fetch: Fetch, size: int = SIZE) -> list[str]:
    seen: list[str] = []
    after: str | None = None
    while True:
        page, _ = await fetch({"first": size} if after is None else {"first": size, "after": after})
        check_cursors(page)
        info = page["pageInfo"]
        assert info["hasPreviousPage"] is (after is not None)
        seen += node_ids(page)
        if not info["hasNextPage"]:
            return seen
        assert len(page["edges"]) == size and len(seen) < 500
        after = info["endCursor"]


async def walk_backward(fetch: Fetch, size: int = SIZE) -> list[str]:
    seen: list[str] = []
    before: str | None = None
    while True:
        # `first` left to its default: paging back sends only last/before
        page, _ = await fetch({"last": size} if before is None else {"last": size, "before": before})
        check_cursors(page)
        info = page["pageInfo"]
        assert info["hasNextPage"] is (before is not None)
        seen = node_ids(page) + seen
        if not info["hasPreviousPage"]:
            return seen
        assert len(page["edges"]) == size and len(seen) < 500
        before = info["startCursor"]


async def pages_both_ways(fetch: Fetch, expected: list[str]) -> None:
    """Every row exactly once, in order, both ways; a page of 7 costs the statements of a page of 1."""
    assert len(expected) == len(set(expected))
    assert await walk_forward(fetch) == expected
    assert await walk_backward(fetch) == expected
    costs = [
        (await fetch(variables))[1] for variables in ({"first": 1}, {"first": 7}, {"last": 1}, {"last": 7})
    ]
    assert len(set(costs)) == 1, costs


async def test_tasks_page_both_ways_and_a_partner_pages_only_the_owner_they_watch(
    paging_api: ApiClient,
) -> None:
    api = paging_api
    owner_token, owner_id, partner_token, _ = await partner_pair(api)
    created = [(await create_open_task(api, owner_token, "PHOTO"))[0] for _ in range(8)]
    newest_first = created[::-1]
    await pages_both_ways(root(api, owner_token, "tasks"), newest_first)
    await pages_both_ways(root(api, partner_token, "tasks", user_id=owner_id), newest_first)

    stranger, _ = await api.register()
    with pytest.raises(GraphQLFailure) as hidden:
        await api.execute(
            "query($u: ID) { tasks(userId: $u) { edges { node { id } } } }", {"u": owner_id}, token=stranger
        )
    assert hidden.value.code == "NOT_FOUND"
    assert await walk_forward(root(api, stranger, "tasks")) == []


async def test_instances_page_both_ways_and_a_partner_sees_only_history_since_the_partnership(
    paging_api: ApiClient, db: asyncpg.Connection, database_url: str
) -> None:
    api = paging_api
    owner_token, _, partner_token, _ = await partner_pair(api)
    task_id, open_id = await create_open_task(api, owner_token, "PHOTO")
    await add_history(database_url, task_id)  # 8 settled instances from a month ago
    rows = await db.fetch(
        "SELECT id FROM task_instances WHERE task_id = $1 ORDER BY seq DESC", uuid.UUID(row_key(task_id))
    )
    newest_first = [global_id("TaskInstance", str(row["id"])) for row in rows]
    assert len(newest_first) == 9 and newest_first[0] == open_id
    await pages_both_ways(nested(api, owner_token, "task", task_id, "instances"), newest_first)
    assert await walk_backward(nested(api, partner_token, "task", task_id, "instances")) == [open_id]


async def test_events_page_both_ways_for_the_owner_and_their_partner_and_nobody_else(
    paging_api: ApiClient, db: asyncpg.Connection
) -> None:
    api = paging_api
    owner_token, owner_id, partner_token, _ = await partner_pair(api)
    owner = {"id": owner_id}
    await task_with_history(api, db, owner_token, owner, "Gym")
    await task_with_history(api, db, owner_token, owner, "Run")
    listed = [
        e["id"] for e in (await api.execute("{ events(first: 100) { id } }", token=owner_token))["events"]
    ]
    assert len(listed) == 12
    await pages_both_ways(root(api, owner_token, "eventsConnection"), listed)
    await pages_both_ways(root(api, partner_token, "eventsConnection"), listed)
    await pages_both_ways(root(api, partner_token, "eventsConnection", user_id=owner_id), listed)
    stranger, _ = await api.register()
    assert await walk_backward(root(api, stranger, "eventsConnection")) == []


async def test_the_review_queue_pages_both_ways_for_the_deciding_partner_only(paging_api: ApiClient) -> None:
    api = paging_api
    owner_token, _, partner_token, _ = await partner_pair(api)
    await review_requests(api, owner_token, 7, seed=700)
    listed = [
        v["id"]
        for v in (await api.execute("{ reviewQueue(first: 100) { id } }", token=partner_token))["reviewQueue"]
    ]
    assert len(listed) == 7
    await pages_both_ways(root(api, partner_token, "reviewQueueConnection"), listed)
    assert await walk_forward(root(api, owner_token, "reviewQueueConnection")) == []


async def test_partnerships_page_both_ways_and_hide_removed_ones_unless_asked(
    paging_api: ApiClient, db: asyncpg.Connection
) -> None:
    api = paging_api
    token, user = await api.register()
    for _ in range(7):
        email = f"invitee-{uuid.uuid4().hex[:8]}@example.com"
        await api.execute(
            "mutation($e: String!) { invitePartner(email: $e) { id } }", {"e": email}, token=token
        )
    removed = uuid.uuid4()
    await db.execute(
        "INSERT INTO partnerships (id, user_id, invited_email, status, created_at)"
        " VALUES ($1, $2, 'gone@example.com', 'REMOVED', now())",
        removed,
        uuid.UUID(row_key(user["id"])),
    )
    listed = [p["id"] for p in (await api.execute("{ partnerships { id } }", token=token))["partnerships"]]
    assert len(listed) == 8 and listed[0] == global_id("Partnership", str(removed))  # the old list keeps all
    await pages_both_ways(root(api, token, "partnershipsConnection"), listed[1:])
    everything = root(api, token, "partnershipsConnection", ", includeRemoved: true")
    assert await walk_backward(everything) == listed
    only_removed = root(api, token, "partnershipsConnection", ", status: REMOVED")
    assert await walk_forward(only_removed) == [global_id("Partnership", str(removed))]
    invited = root(api, token, "partnershipsConnection", ", status: INVITED")
    assert await walk_forward(invited) == listed[1:]


async def test_sessions_page_both_ways(paging_api: ApiClient) -> None:
    api = paging_api
    token, user = await api.register()
    for _ in range(7):
        await api.execute(
            "mutation($e: String!, $p: String!) { login(email: $e, password: $p) { token } }",
            {"e": user["email"], "p": "correct horse battery"},
        )
    listed = [s["id"] for s in (await api.execute("{ sessions { id } }", token=token))["sessions"]]
    assert len(listed) == 8
    await pages_both_ways(root(api, token, "sessionsConnection"), listed)


async def test_webhooks_page_both_ways_and_only_your_own(
    paging_api: ApiClient, db: asyncpg.Connection
) -> None:
    api = paging_api
    token, user = await api.register()
    other, _ = await api.register()
    start = datetime.now(UTC) - timedelta(hours=1)
    for n in range(7):
        await db.execute(
            "INSERT INTO webhooks (id, owner_id, url, secret, created_at) VALUES ($1, $2, $3, 'x' , $4)",
            uuid.uuid4(),
            uuid.UUID(row_key(user["id"])),
            f"https://hooks.example.com/{n}",
            start + timedelta(minutes=n),
        )
    listed = [w["id"] for w in (await api.execute("{ webhooks { id } }", token=token))["webhooks"]]
    assert len(listed) == 7
    await pages_both_ways(root(api, token, "webhooksConnection"), listed)
    assert await walk_forward(root(api, other, "webhooksConnection")) == []


async def test_an_instances_verifications_page_both_ways_for_owner_and_partner(paging_api: ApiClient) -> None:
    api = paging_api
    owner_token, _, partner_token, _ = await partner_pair(api)
    _, instance_id = await create_open_task(api, owner_token, "GPS")
    far = {"latitude": BERLIN[0] + 0.05, "longitude": BERLIN[1]}
    for _ in range(7):
        checked = await api.execute(
            "mutation($id: ID!, $at: GeoPointInput!) { checkIn(instanceId: $id, location: $at, accuracyMeters: 10)"
            " { status reason } }",
            {"id": instance_id, "at": far},
            token=owner_token,
        )
        assert checked["checkIn"] == {"status": "REJECTED", "reason": "OUTSIDE_GEOFENCE"}
    document = "query($id: ID!) { instance(id: $id) { verifications { id } } }"
    listed = [
        v["id"]
        for v in (await api.execute(document, {"id": instance_id}, token=owner_token))["instance"][
            "verifications"
        ]
    ]
    assert len(listed) == 7
    await pages_both_ways(
        nested(api, owner_token, "instance", instance_id, "verificationsConnection"), listed
    )
    await pages_both_ways(
        nested(api, partner_token, "instance", instance_id, "verificationsConnection"), listed
    )
    stranger, _ = await api.register()
    assert (await api.execute(document, {"id": instance_id}, token=stranger))["instance"] is None


CONNECTIONS = [
    "tasks",
    "eventsConnection",
    "reviewQueueConnection",
    "partnershipsConnection",
    "sessionsConnection",
    "webhooksConnection",
]


@pytest.mark.parametrize("field", CONNECTIONS)
async def test_page_sizes_over_100_both_directions_at_once_and_foreign_cursors_are_refused(
    api: ApiClient, field: str
) -> None:
    token, _ = await api.register()
    document = f"query({VARIABLES}) {{ {field}({ARGUMENTS}) {{ {PAGE} }} }}"
    asks: list[tuple[dict[str, Any], str]] = [
        ({"first": 101}, "first"),
        ({"last": 101}, "last"),
        ({"first": -1}, "first"),
        ({"first": 2, "last": 2}, "last"),
        ({"after": "not-a-cursor"}, "after"),
        ({"before": "bm90aGluZw"}, "before"),
    ]
    for variables, refused_field in asks:
        with pytest.raises(GraphQLFailure) as refused:
            await api.execute(document, variables, token=token)
        assert (refused.value.code, refused.value.field) == ("BAD_USER_INPUT", refused_field), variables
    for largest in ({"first": 100}, {"last": 100}):
        page = (await api.execute(document, largest, token=token))[field]
        assert page["pageInfo"]["hasNextPage"] is page["pageInfo"]["hasPreviousPage"] is False


async def test_a_cursor_of_one_list_is_refused_by_another(api: ApiClient) -> None:
    token, _ = await api.register()
    for _ in range(2):
        await create_open_task(api, token, "PHOTO")
    tasks = await api.execute("{ tasks(first: 1) { pageInfo { endCursor } } }", token=token)
    cursor = tasks["tasks"]["pageInfo"]["endCursor"]
    with pytest.raises(GraphQLFailure) as refused:
        await api.execute(
            "query($c: String) { webhooksConnection(after: $c) { edges { cursor } } }",
            {"c": cursor},
            token=token,
        )
    assert (refused.value.code, refused.value.field) == ("BAD_USER_INPUT", "after")


def forged(*parts: str) -> str:
    return base64.urlsafe_b64encode("|".join(parts).encode()).decode()


async def test_forged_and_malformed_cursors_are_bad_input_not_internal_errors(api: ApiClient) -> None:
    token, _ = await api.register()
    some_id = str(uuid.uuid4())
    cursors = [
        forged("task", "9999-12-31T23:59:59-14:00", some_id),
        forged("task", "0001-01-01T00:00:00+14:00", some_id),
        forged("task", "2026-01-01T00:00:00", some_id),  # no offset
        forged("task", "2026-01-01T00:00:00+00:00", "not-a-uuid\x00"),
        forged("task", "2026-01-01T00:00:00+00:00"),
        forged("instance", "9" * 40),
        "\udc80",
        "é" * 10,
        "%%%%",
        "",
    ]
    for cursor in cursors:
        with pytest.raises(GraphQLFailure) as refused:
            await api.execute(
                "query($c: String) { tasks(after: $c) { edges { cursor } } }", {"c": cursor}, token=token
            )
        assert refused.value.code == "BAD_USER_INPUT", cursor
    # a well-formed cursor of a row that is gone still pages: keyset bounds, not positions
    page = await api.execute(
        "query($c: String) { tasks(before: $c) { edges { cursor } pageInfo { hasNextPage } } }",
        {"c": forged("task", "2026-01-01T00:00:00+00:00", some_id)},
        token=token,
    )
    assert page["tasks"] == {"edges": [], "pageInfo": {"hasNextPage": False}}
