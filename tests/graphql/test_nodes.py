"""Relay's Node: node(id:)/nodes(ids:) refetch what the viewer may read; ids work in every argument;
event ids tell nothing of the platform's volume or of other users' order."""

from __future__ import annotations

import asyncio
import base64
import time
from collections.abc import Iterator
from typing import Any

import pytest

from harness.mailbox import Mailbox
from harness.proofloop import (
    ApiClient,
    GraphQLFailure,
    ServerProcess,
    WorkerProcess,
    create_open_task,
    free_port,
    partner_pair,
    row_key,
)

NODE = """query($id: ID!) { node(id: $id) { __typename id
  ... on Task { title } ... on TaskInstance { instanceStatus: status }
  ... on Verification { proofStatus: status } ... on User { displayName }
  ... on Partnership { partnershipStatus: status } ... on Session { current } ... on VerificationEvent { type }
} }"""
# the field each type answers with in NODE
SHOWN = {
    "Task": "title",
    "TaskInstance": "instanceStatus",
    "Verification": "proofStatus",
    "User": "__typename",
    "Partnership": "partnershipStatus",
    "Session": "current",
    "VerificationEvent": "type",
}
NODES = "query($ids: [ID!]!) { nodes(ids: $ids) { __typename id } }"
CHECK_IN = """mutation($id: ID!) {
  checkIn(instanceId: $id, location: {latitude: 0, longitude: 0}, accuracyMeters: 5) { id status }
}"""
EVENTS = "query($after: ID) { events(after: $after, first: 100) { id type } }"


def decoded(global_id: str) -> str:
    return base64.urlsafe_b64decode(global_id + "=" * (-len(global_id) % 4)).decode()


async def node(api: ApiClient, token: str, id: str) -> dict[str, Any] | None:
    found: dict[str, Any] | None = (await api.execute(NODE, {"id": id}, token=token))["node"]
    return found


async def events_of(api: ApiClient, token: str, count: int, after: str = "0") -> list[dict[str, Any]]:
    deadline = time.monotonic() + 15
    while time.monotonic() < deadline:
        events: list[dict[str, Any]] = (await api.execute(EVENTS, {"after": after}, token=token))["events"]
        if len(events) >= count:
            return events
        await asyncio.sleep(0.3)
    raise AssertionError(f"fewer than {count} events")


async def rejected_check_ins(api: ApiClient, token: str, count: int) -> tuple[str, str, list[str]]:
    """A GPS task of the user and `count` rejected check-ins (an event each): task, instance, proofs."""
    task_id, instance_id = await create_open_task(api, token, "GPS")
    proofs = [
        (await api.execute(CHECK_IN, {"id": instance_id}, token=token))["checkIn"]["id"] for _ in range(count)
    ]
    return task_id, instance_id, proofs


async def test_node_refetches_each_type_the_viewer_may_read(api: ApiClient) -> None:
    owner_token, owner_id, partner_token, partner_id = await partner_pair(api)
    task_id, instance_id, (proof_id,) = await rejected_check_ins(api, owner_token, 1)
    (event,) = await events_of(api, owner_token, 1)
    partnership_id = (await api.execute("{ partnerships { id } }", token=owner_token))["partnerships"][0][
        "id"
    ]
    session_id = (await api.execute("{ sessions { id } }", token=owner_token))["sessions"][0]["id"]

    expected = {
        task_id: ("Task", "Gps task"),
        instance_id: ("TaskInstance", "PENDING"),
        proof_id: ("Verification", "REJECTED"),
        owner_id: ("User", "User"),
        partner_id: ("User", "User"),
        partnership_id: ("Partnership", "ACTIVE"),
        session_id: ("Session", True),
        event["id"]: ("VerificationEvent", "PROOF_SUBMITTED"),
    }
    for id, (typename, value) in expected.items():
        found = await node(api, owner_token, id)
        assert found is not None and found["__typename"] == typename and found["id"] == id
        assert found[SHOWN[typename]] == value
        assert decoded(id).startswith(f"{typename}:")
    # the partner reads what a partner may: the task, its instance and proof, the event, both users
    for id in (task_id, instance_id, proof_id, event["id"], owner_id, partner_id, partnership_id):
        assert (await node(api, partner_token, id)) is not None
    # another device's session is not the partner's
    assert await node(api, partner_token, session_id) is None


async def test_nodes_answer_null_for_foreign_and_missing_ids_alike(api: ApiClient) -> None:
    owner_token, owner_id, partner_token, _ = await partner_pair(api)
    stranger_token, stranger = await api.register()
    own_task, _ = await create_open_task(api, partner_token, "PHOTO")
    watched_task, watched_instance = await create_open_task(api, owner_token, "PHOTO")
    foreign_task, foreign_instance = await create_open_task(api, stranger_token, "PHOTO")
    missing_task = base64.urlsafe_b64encode(b"Task:00000000-0000-4000-8000-000000000000").decode().rstrip("=")
    ids = [
        own_task,
        watched_task,
        foreign_task,
        watched_instance,
        foreign_instance,
        missing_task,
        stranger["id"],
        owner_id,
        "not an id",
        row_key(own_task),  # a bare key names no type: node() needs the global id
    ]
    found = (await api.execute(NODES, {"ids": ids}, token=partner_token))["nodes"]
    assert [n and n["id"] for n in found] == [
        own_task,
        watched_task,
        None,
        watched_instance,
        None,
        None,
        None,
        owner_id,
        None,
        None,
    ]
    # one of someone else's ids answers exactly as one that names nothing: null, no error
    assert await node(api, partner_token, foreign_task) is None
    assert await node(api, partner_token, missing_task) is None

    with pytest.raises(GraphQLFailure) as too_many:
        await api.execute(NODES, {"ids": [own_task] * 101}, token=partner_token)
    assert too_many.value.code == "BAD_USER_INPUT"


async def test_ids_from_the_api_work_in_existing_arguments_in_either_form(api: ApiClient) -> None:
    owner_token, owner_id, partner_token, _ = await partner_pair(api)
    task_id, instance_id, _ = await rejected_check_ins(api, owner_token, 1)
    for task in (task_id, row_key(task_id)):
        assert (
            await api.execute("query($id: ID!) { task(id: $id) { id } }", {"id": task}, token=owner_token)
        )["task"]["id"] == task_id
    for instance in (instance_id, row_key(instance_id)):
        data = await api.execute(
            "query($id: ID!) { instance(id: $id) { id } }", {"id": instance}, token=owner_token
        )
        assert data["instance"]["id"] == instance_id
        assert (await api.execute(CHECK_IN, {"id": instance}, token=owner_token))["checkIn"][
            "status"
        ] == "REJECTED"
    for user in (owner_id, row_key(owner_id)):
        data = await api.execute(
            "query($u: ID, $t: ID) { tasks(userId: $u) { edges { node { id } } }"
            " events(userId: $u, taskId: $t) { id } progress(userId: $u) { currentStreak } }",
            {"u": user, "t": task_id},
            token=partner_token,
        )
        assert [e["node"]["id"] for e in data["tasks"]["edges"]] == [task_id]
    # a global id of another type names nothing here, as a missing one
    wrong_type = base64.urlsafe_b64encode(f"User:{row_key(task_id)}".encode()).decode().rstrip("=")
    assert (
        await api.execute("query($id: ID!) { task(id: $id) { id } }", {"id": wrong_type}, token=owner_token)
    )["task"] is None
    with pytest.raises(GraphQLFailure) as missing:
        await api.execute(
            "mutation($id: ID!) { pauseTask(id: $id) { id } }", {"id": wrong_type}, token=owner_token
        )
    assert missing.value.code == "NOT_FOUND"
    assert (
        await api.execute(
            "mutation($id: ID!) { pauseTask(id: $id) { state } }", {"id": task_id}, token=owner_token
        )
    )["pauseTask"]["state"] == "PAUSED"


async def test_event_ids_of_new_users_reveal_neither_counts_nor_order(api: ApiClient) -> None:
    first_token, _ = await api.register()
    second_token, _ = await api.register()
    await rejected_check_ins(api, first_token, 3)
    await rejected_check_ins(api, second_token, 3)
    first, second = await events_of(api, first_token, 3), await events_of(api, second_token, 3)
    ids = [e["id"] for e in first + second]
    for id in ids:
        assert not id.isdigit()
        type_name, _, key = decoded(id).partition(":")
        assert type_name == "VerificationEvent" and len(key) == 32 and int(key, 16) > 2**64
    assert sorted(ids) != ids  # six ids in stream order sort into it only by chance (1 in 720)

    # they resume a feed: what came after the first event, and a bare position is refused
    later = await api.execute(EVENTS, {"after": first[0]["id"]}, token=first_token)
    assert [e["id"] for e in later["events"]] == [e["id"] for e in first[1:]]
    with pytest.raises(GraphQLFailure) as bare:
        await api.execute(EVENTS, {"after": "5"}, token=first_token)
    assert bare.value.code == "BAD_USER_INPUT"
    # another user's event id resumes nothing of theirs, and refetches as null
    assert await node(api, second_token, first[0]["id"]) is None


@pytest.fixture(scope="module")
def counting_server(service_env: dict[str, str]) -> Iterator[ServerProcess]:
    with ServerProcess({**service_env, "PROOFLOOP_COUNT_STATEMENTS": "true"}, port=free_port()) as proc:
        yield proc


async def test_nodes_of_20_tasks_run_as_many_statements_as_nodes_of_1(
    counting_server: ServerProcess, worker: WorkerProcess, mailbox: Mailbox
) -> None:
    from tests.support.read_statements import counted

    api = ApiClient(counting_server.url, mailbox)
    owner_token, _, partner_token, _ = await partner_pair(api)
    tasks = [(await create_open_task(api, owner_token, "PHOTO"))[0] for _ in range(20)]
    document = "query($ids: [ID!]!) { nodes(ids: $ids) { id ... on Task { title owner { id } } } }"
    one, one_count = await counted(api.url, document, partner_token, ids=tasks[:1])
    twenty, twenty_count = await counted(api.url, document, partner_token, ids=tasks)
    assert [n["id"] for n in twenty["nodes"]] == tasks and len(one["nodes"]) == 1
    assert one_count == twenty_count


async def test_a_resumed_subscription_replays_from_an_opaque_event_id(
    server: ServerProcess, api: ApiClient, worker: WorkerProcess
) -> None:
    from tests.support.live import live_feed

    token, _ = await api.register()
    _, instance_id, _ = await rejected_check_ins(api, token, 1)
    (first,) = await events_of(api, token, 1)
    for _ in range(2):
        await api.execute(CHECK_IN, {"id": instance_id}, token=token)
    missed = await events_of(api, token, 2, after=first["id"])
    async with live_feed(server, token, after=first["id"]) as feed:
        replayed = await feed.take(2)
    assert [e["id"] for e in replayed] == [e["id"] for e in missed]
