"""What partners see (docs/api.md, "What partners see"), read through the real API by every role.

Owner, active partner, co-partner (a second active partner), removed partner, invited-not-accepted and
stranger; events from before and after the partnership began; a deleted task; a reviewer's details.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass
from typing import Any

import pytest

from harness.proofloop import ApiClient, GraphQLFailure, create_open_task
from tests.support.live import make_partners
from tests.support.read_statements import HISTORY, add_history

CHECK_IN = """mutation($id: ID!) {
  checkIn(instanceId: $id, location: {latitude: 52.52, longitude: 13.405}, accuracyMeters: 5) { status }
}"""
EVENTS = "query($u: ID, $t: ID) { events(userId: $u, taskId: $t, first: 100) { taskTitle task { id } } }"
TASK = "query($id: ID!) { task(id: $id) { id title } }"
INSTANCES = "query($id: ID!) { task(id: $id) { instances(first: 50) { totalCount edges { node { id } } } } }"
INSTANCE = "query($id: ID!) { instance(id: $id) { id } }"
REMOVE = "mutation($id: ID!) { removePartner(partnershipId: $id) }"
INVITE = "mutation($e: String!) { invitePartner(email: $e) { id } }"
REVIEWER = """query($id: ID!) {
  instance(id: $id) { verifications { reviewer { id displayName timezone email emailVerified } } }
}"""
OUTSIDERS = ("removed", "invited", "stranger")


@dataclass
class World:
    tokens: dict[str, str]
    users: dict[str, dict[str, Any]]
    tasks: dict[str, str]  # title -> task id
    instances: dict[str, str]  # title -> the instance proved


async def _titles(api: ApiClient, token: str, **variables: str) -> list[str]:
    events = (await api.execute(EVENTS, variables, token=token))["events"]
    return sorted({event["taskTitle"] for event in events})


async def _proved_task(api: ApiClient, token: str, title: str, world: World) -> None:
    task_id, instance_id = await create_open_task(api, token, "GPS", title=title)
    assert (await api.execute(CHECK_IN, {"id": instance_id}, token=token))["checkIn"]["status"] == "ACCEPTED"
    world.tasks[title], world.instances[title] = task_id, instance_id


async def _positioned(api: ApiClient, token: str, titles: set[str]) -> None:
    """Wait until the pump has positioned (made readable) the events of `titles`."""
    deadline = time.monotonic() + 15
    while not titles <= set(await _titles(api, token)):
        assert time.monotonic() < deadline, "the pump did not position the events"
        await asyncio.sleep(0.2)


@pytest.fixture
async def world(api: ApiClient, database_url: str) -> World:
    tokens: dict[str, str] = {}
    users: dict[str, dict[str, Any]] = {}
    for role in ("owner", "partner", "copartner", "removed", "invited", "stranger"):
        verified = role in ("partner", "copartner", "removed")
        tokens[role], users[role] = await (api.register_verified() if verified else api.register())
    world = World(tokens, users, {}, {})
    owner = tokens["owner"]
    await _proved_task(api, owner, "Before", world)  # proved before anyone partners
    await add_history(database_url, world.tasks["Before"])  # and settled instances a month old
    await _positioned(api, owner, {"Before"})

    for role in ("partner", "copartner", "removed"):
        partnership = await make_partners(api, owner, tokens[role], users[role]["email"])
        if role == "removed":
            removed_partnership = partnership
    await api.execute(INVITE, {"e": users["invited"]["email"]}, token=owner)  # never accepted

    await _proved_task(api, owner, "After", world)
    await _proved_task(api, owner, "Gone", world)
    await _positioned(api, owner, {"After", "Gone"})
    await api.execute("mutation($id: ID!) { deleteTask(id: $id) }", {"id": world.tasks["Gone"]}, token=owner)
    await api.execute(REMOVE, {"id": removed_partnership}, token=owner)
    return world


async def _code(api: ApiClient, document: str, variables: dict[str, str], token: str) -> str:
    try:
        await api.execute(document, variables, token=token)
    except GraphQLFailure as failure:
        return failure.code
    return "OK"


async def test_partners_read_history_from_the_partnerships_start_and_nothing_of_a_deleted_task(
    api: ApiClient, world: World
) -> None:
    owner_id = world.users["owner"]["id"]
    # the owner keeps their whole history, a deleted task's events included
    assert await _titles(api, world.tokens["owner"]) == ["After", "Before", "Gone"]
    owned = (await api.execute(INSTANCES, {"id": world.tasks["Before"]}, token=world.tokens["owner"]))["task"]
    # the month-old history, the proved instance and the next one the proof planned
    assert owned["instances"]["totalCount"] == len(owned["instances"]["edges"]) == len(HISTORY) + 2
    for role in ("partner", "copartner"):
        token = world.tokens[role]
        assert await _titles(api, token) == ["After"], role
        assert await _titles(api, token, u=owner_id) == ["After"], role
        # a live task from before the partnership is visible; its history before the start is not
        assert (await api.execute(TASK, {"id": world.tasks["Before"]}, token=token))["task"] is not None
        assert await _titles(api, token, t=world.tasks["Before"]) == [], role
        # of its instances, the one still open when the partnership began and later ones: not the history
        instances = (await api.execute(INSTANCES, {"id": world.tasks["Before"]}, token=token))["task"]
        assert instances["instances"]["totalCount"] == 2, role
        seen = [edge["node"]["id"] for edge in instances["instances"]["edges"]]
        assert len(seen) == 2 and world.instances["Before"] in seen, role
        for old in {edge["node"]["id"] for edge in owned["instances"]["edges"]} - set(seen):
            assert (await api.execute(INSTANCE, {"id": old}, token=token))["instance"] is None, role
        assert await _titles(api, token, t=world.tasks["After"]) == ["After"], role
        # a deleted task: not by id, not through its events, not as a filter
        assert (await api.execute(TASK, {"id": world.tasks["Gone"]}, token=token))["task"] is None, role
        assert await _code(api, EVENTS, {"t": world.tasks["Gone"]}, token) == "NOT_FOUND", role
        assert (await api.execute(INSTANCE, {"id": world.instances["After"]}, token=token))["instance"]
        assert (await api.execute(INSTANCE, {"id": world.instances["Gone"]}, token=token))["instance"] is None


async def test_outsiders_read_nothing_of_the_owner(api: ApiClient, world: World) -> None:
    owner_id = world.users["owner"]["id"]
    for role in OUTSIDERS:
        token = world.tokens[role]
        assert await _titles(api, token) == [], role
        assert await _code(api, EVENTS, {"u": owner_id}, token) == "NOT_FOUND", role
        for title in ("Before", "After"):
            assert await _code(api, EVENTS, {"t": world.tasks[title]}, token) == "NOT_FOUND", role
            assert (await api.execute(TASK, {"id": world.tasks[title]}, token=token))["task"] is None, role
            instance = await api.execute(INSTANCE, {"id": world.instances[title]}, token=token)
            assert instance["instance"] is None, role


async def test_a_reviewer_shows_co_partners_only_a_display_name(api: ApiClient, world: World) -> None:
    owner = world.tokens["owner"]
    _, instance_id = await create_open_task(api, owner, "PARTNER")
    requested = await api.execute("mutation($id: ID!) { requestReview(instanceId: $id) { id } }",
                                  {"id": instance_id}, token=owner)  # fmt: skip
    await api.execute(
        "mutation($id: ID!) { review(verificationId: $id, approve: true) { status } }",
        {"id": requested["requestReview"]["id"]},
        token=world.tokens["partner"],
    )
    reviewer = world.users["partner"]
    for role in ("copartner", "owner"):
        seen = await api.execute(REVIEWER, {"id": instance_id}, token=world.tokens[role])
        (verification,) = seen["instance"]["verifications"]
        assert verification["reviewer"] == {
            "id": reviewer["id"],
            "displayName": reviewer["email"].split("@")[0],
            "timezone": "",
            "email": None,
            "emailVerified": None,
        }, role
    # the reviewer reads their own details
    seen = await api.execute(REVIEWER, {"id": instance_id}, token=world.tokens["partner"])
    own = seen["instance"]["verifications"][0]["reviewer"]
    assert (own["timezone"], own["email"], own["emailVerified"]) == ("UTC", reviewer["email"], True)
