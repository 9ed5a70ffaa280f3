"""Reads cost the same SQL for 1 row as for 20: DataLoaders, one grouped statement per aspect.

The server runs with PROOFLOOP_COUNT_STATEMENTS, so each HTTP response says how many statements its
request ran; the same document is sent by a viewer with one row and by a viewer with many.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from harness.mailbox import Mailbox
from harness.proofloop import (
    ApiClient,
    ServerProcess,
    WorkerProcess,
    create_open_task,
    free_port,
    partner_pair,
)
from tests.support.read_statements import HISTORY, add_history, counted, review_requests

TASK_PAGE = """query($first: Int) { tasks(first: $first) { edges { node {
  id streak currentInstance { id status dueAt isOpen } instances { totalCount }
} } } }"""
INSTANCE_PAGES = """query { tasks(first: 20) { edges { node {
  id instances(first: 2) { edges { node { id status } } pageInfo { hasNextPage endCursor } }
} } } }"""
REVIEW_QUEUE = """query { reviewQueue(first: 50) {
  id status note mediaUrl thumbnailUrl submittedAt reviewer { id }
  instance { id status dueAt task { id title streak owner { displayName } currentInstance { id } } }
} }"""
EVENTS = """query { events(first: 50) {
  id type taskTitle user { displayName } task { id title currentInstance { id } }
  instance { id status dueAt } verification { id status mediaUrl }
} }"""
MAX_STATEMENTS = 8
# the review and event documents also reach each row's task, its owner, streak and open instance
MAX_DEEP_STATEMENTS = 10


@pytest.fixture(scope="module")
def counting_server(service_env: dict[str, str]) -> Iterator[ServerProcess]:
    with ServerProcess({**service_env, "PROOFLOOP_COUNT_STATEMENTS": "true"}, port=free_port()) as proc:
        yield proc


@pytest.fixture
async def counting_api(counting_server: ServerProcess, worker: WorkerProcess, mailbox: Mailbox) -> ApiClient:
    return ApiClient(counting_server.url, mailbox)  # the worker mails partners' verification links


async def user_with_tasks(api: ApiClient, count: int) -> str:
    token, _ = await api.register()
    for _ in range(count):
        await create_open_task(api, token, "PHOTO")
    return token


async def test_a_page_of_20_tasks_runs_as_many_statements_as_a_page_of_1(
    counting_api: ApiClient, database_url: str
) -> None:
    url = counting_api.url
    one, twenty = await user_with_tasks(counting_api, 1), await user_with_tasks(counting_api, 20)
    first_id = (await counted(url, TASK_PAGE, twenty, first=20))[0]["tasks"]["edges"][-1]["node"]["id"]
    await add_history(database_url, first_id)

    data_one, statements_one = await counted(url, TASK_PAGE, one, first=20)
    data_twenty, statements_twenty = await counted(url, TASK_PAGE, twenty, first=20)

    assert len(data_one["tasks"]["edges"]) == 1 and len(data_twenty["tasks"]["edges"]) == 20
    assert statements_one == statements_twenty <= MAX_STATEMENTS
    nodes = {edge["node"]["id"]: edge["node"] for edge in data_twenty["tasks"]["edges"]}
    # the one grouped streak query still reads each task's own history
    assert nodes[first_id]["streak"] == 2 and nodes[first_id]["instances"]["totalCount"] == len(HISTORY) + 1
    assert all(
        n["streak"] == 0 and n["instances"]["totalCount"] == 1 for k, n in nodes.items() if k != first_id
    )
    assert all(
        n["currentInstance"]["status"] == "PENDING" and n["currentInstance"]["isOpen"] for n in nodes.values()
    )

    pages_one = await counted(url, INSTANCE_PAGES, one)
    pages_twenty = await counted(url, INSTANCE_PAGES, twenty)
    assert pages_one[1] == pages_twenty[1] <= MAX_STATEMENTS
    pages = {e["node"]["id"]: e["node"]["instances"] for e in pages_twenty[0]["tasks"]["edges"]}
    assert [e["node"]["status"] for e in pages[first_id]["edges"]] == ["PENDING", "VERIFIED"]
    assert pages[first_id]["pageInfo"]["hasNextPage"] is True
    assert all(not p["pageInfo"]["hasNextPage"] for k, p in pages.items() if k != first_id)


async def test_instance_counts_are_read_only_when_asked_for(counting_api: ApiClient) -> None:
    token = await user_with_tasks(counting_api, 3)
    without = "query { tasks { edges { node { id instances { edges { node { id } } } } } } }"
    with_count = "query { tasks { edges { node { id instances { totalCount edges { node { id } } } } } } }"
    assert (await counted(counting_api.url, with_count, token))[1] == (
        await counted(counting_api.url, without, token)
    )[1] + 1


async def test_review_queue_and_events_pages_cost_the_same_for_1_row_as_for_many(
    counting_api: ApiClient,
) -> None:
    url = counting_api.url
    lone_owner, _, lone_partner, _ = await partner_pair(counting_api)
    await review_requests(counting_api, lone_owner, 1, seed=100)
    busy_partner_token = None
    for k in range(2):  # one partner watching two owners, several reviews each
        owner_token, _, partner_token, _ = await partner_pair(counting_api)
        if busy_partner_token is None:
            busy_partner_token = partner_token
        else:
            invite = await counting_api.execute(
                "mutation($e: String!) { invitePartner(email: $e) { id } }",
                {
                    "e": (await counting_api.execute("{ me { email } }", token=busy_partner_token))["me"][
                        "email"
                    ]
                },
                token=owner_token,
            )
            await counting_api.execute(
                "mutation($id: ID!) { respondToInvite(partnershipId: $id, accept: true) { status } }",
                {"id": invite["invitePartner"]["id"]},
                token=busy_partner_token,
            )
        await review_requests(counting_api, owner_token, 3, seed=200 + 10 * k)
    assert busy_partner_token is not None

    lone_queue, lone_statements = await counted(url, REVIEW_QUEUE, lone_partner)
    busy_queue, busy_statements = await counted(url, REVIEW_QUEUE, busy_partner_token)
    assert len(lone_queue["reviewQueue"]) == 1 and len(busy_queue["reviewQueue"]) == 6
    assert all(r["mediaUrl"] and r["thumbnailUrl"] for r in busy_queue["reviewQueue"])
    assert lone_statements == busy_statements <= MAX_DEEP_STATEMENTS

    lone_events, lone_statements = await counted(url, EVENTS, lone_partner)
    busy_events, busy_statements = await counted(url, EVENTS, busy_partner_token)
    assert len(lone_events["events"]) == 1 and len(busy_events["events"]) == 6
    assert all(e["verification"]["mediaUrl"] for e in busy_events["events"])
    assert lone_statements == busy_statements <= MAX_DEEP_STATEMENTS
