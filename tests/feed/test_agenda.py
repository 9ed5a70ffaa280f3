"""The home screen through the real API and worker: the agenda across the viewer's tasks and the users they
partner for (by due time, paged, from the partnership's start), and the badge counts."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from harness.chain_support import eventually
from harness.proofloop import ApiClient, GraphQLFailure, create_open_task, partner_pair

AGENDA = """query($from: DateTime!, $to: DateTime!, $user: ID, $first: Int, $after: String,
                 $last: Int, $before: String) {
  agenda(from: $from, to: $to, userId: $user, first: $first, after: $after, last: $last, before: $before) {
    edges { cursor node { id dueAt status task { title } } }
    pageInfo { hasNextPage hasPreviousPage startCursor endCursor }
  }
}"""
BADGES = "query { badges { reviewsWaiting appealsWaiting dueToday } }"
CREATE = """mutation($input: CreateTaskInput!) {
  createTask(input: $input) { id currentInstance { id dueAt } }
}"""
INSTANCE = "query($id: ID!) { instance(id: $id) { status } }"
INVITE = "mutation($e: String!) { invitePartner(email: $e) { id } }"
ACCEPT = "mutation($id: ID!) { respondToInvite(partnershipId: $id, accept: true) { status } }"
REQUEST_REVIEW = 'mutation($id: ID!) { requestReview(instanceId: $id, note: "done") { status } }'
APPEAL = 'mutation($id: ID!) { appeal(instanceId: $id, note: "I was there") { status } }'


def iso(at: datetime) -> str:
    return at.isoformat()


def one_off(title: str, due_in: timedelta, *, window: int = 3600, zone: str = "UTC") -> dict[str, Any]:
    starts = (datetime.now(UTC) + due_in).replace(microsecond=0)
    return {
        "title": title,
        "method": "PHOTO",
        "schedule": {"startsAt": iso(starts), "timezone": zone, "windowSeconds": window, "graceSeconds": 0},
    }


async def create(api: ApiClient, token: str, task_input: dict[str, Any]) -> dict[str, Any]:
    task: dict[str, Any] = (await api.execute(CREATE, {"input": task_input}, token=token))["createTask"]
    return task


async def agenda(api: ApiClient, token: str, **variables: Any) -> dict[str, Any]:
    now = datetime.now(UTC)
    variables.setdefault("from", iso(now - timedelta(hours=1)))
    variables.setdefault("to", iso(now + timedelta(days=1)))
    page: dict[str, Any] = (await api.execute(AGENDA, variables, token=token))["agenda"]
    return page


def titles(page: dict[str, Any]) -> list[str]:
    return [edge["node"]["task"]["title"] for edge in page["edges"]]


async def test_the_agenda_merges_own_and_partnered_instances_by_due_time(api: ApiClient) -> None:
    owner, owner_id, partner, partner_id = await partner_pair(api)
    stranger, _ = await api.register()
    await create(api, owner, one_off("Owner later", timedelta(hours=2)))
    await create(api, owner, one_off("Owner soon", timedelta(hours=1)))
    await create(api, owner, one_off("Owner next week", timedelta(days=7)))
    await create(api, partner, one_off("Partner between", timedelta(minutes=90)))

    assert titles(await agenda(api, partner)) == ["Owner soon", "Partner between", "Owner later"]
    assert titles(await agenda(api, partner, user=owner_id)) == ["Owner soon", "Owner later"]
    # the owner does not partner for their partner: their own only
    assert titles(await agenda(api, owner)) == ["Owner soon", "Owner later"]
    assert (await agenda(api, stranger))["edges"] == []
    # a user you do not partner for is one that does not exist
    for viewer, user in ((stranger, owner_id), (owner, partner_id), (partner, "VXNlcjpub3QtYS11dWlk")):
        with pytest.raises(GraphQLFailure) as failure:
            await agenda(api, viewer, user=user)
        assert failure.value.code == "NOT_FOUND"


async def test_the_agenda_pages_both_ways_in_one_order(api: ApiClient) -> None:
    token, _ = await api.register()
    for n in range(5):
        await create(api, token, one_off(f"Task {n}", timedelta(hours=1 + n)))
    seen, after = [], None
    while True:
        page = await agenda(api, token, first=2, after=after)
        seen += titles(page)
        if not page["pageInfo"]["hasNextPage"]:
            break
        after = page["pageInfo"]["endCursor"]
    assert seen == [f"Task {n}" for n in range(5)]
    back = await agenda(api, token, last=2, before=page["edges"][0]["cursor"])
    assert titles(back) == ["Task 2", "Task 3"]
    assert back["pageInfo"]["hasPreviousPage"] is True


@pytest.mark.parametrize(
    ("span", "message"),
    [(timedelta(0), "after"), (timedelta(hours=-1), "after"), (timedelta(days=93), "at most 92 days")],
)
async def test_a_range_out_of_bounds_is_refused(api: ApiClient, span: timedelta, message: str) -> None:
    token, _ = await api.register()
    starts = datetime.now(UTC)
    with pytest.raises(GraphQLFailure) as failure:
        await agenda(api, token, **{"from": iso(starts), "to": iso(starts + span)})
    assert (failure.value.code, failure.value.field) == ("BAD_USER_INPUT", "to")
    assert message in failure.value.message


async def test_the_agenda_and_badges_need_a_sign_in(api: ApiClient) -> None:
    for document, variables in (
        (BADGES, {}),
        (AGENDA, {"from": iso(datetime.now(UTC)), "to": iso(datetime.now(UTC))}),
    ):
        with pytest.raises(GraphQLFailure) as failure:
            await api.execute(document, variables)
        assert failure.value.code == "UNAUTHENTICATED"


async def test_a_partner_sees_no_instance_closed_before_the_partnership_and_badges_count(
    api: ApiClient,
) -> None:
    owner, _ = await api.register()
    partner, partner_user = await api.register_verified()
    missed = await create(api, owner, one_off("Missed before", timedelta(seconds=2), window=1))
    missed_id = missed["currentInstance"]["id"]

    async def is_missed() -> bool:
        found = await api.execute(INSTANCE, {"id": missed_id}, token=owner)
        return bool(found["instance"]["status"] == "MISSED")

    await eventually(is_missed, 30, "the one-off instance settles MISSED at its deadline")
    invite = await api.execute(INVITE, {"e": partner_user["email"]}, token=owner)
    await api.execute(ACCEPT, {"id": invite["invitePartner"]["id"]}, token=partner)
    _, open_instance = await create_open_task(api, owner, "PARTNER")

    assert "Missed before" in titles(await agenda(api, owner))
    assert "Missed before" not in titles(await agenda(api, partner))
    assert "Partner task" in titles(await agenda(api, partner))

    await api.execute(REQUEST_REVIEW, {"id": open_instance}, token=owner)
    await api.execute(APPEAL, {"id": missed_id}, token=owner)
    badges = (await api.execute(BADGES, token=partner))["badges"]
    assert badges == {"reviewsWaiting": 1, "appealsWaiting": 1, "dueToday": 0}
    assert (await api.execute(BADGES, token=owner))["badges"]["reviewsWaiting"] == 0


async def test_due_today_counts_the_owners_pending_instances_of_their_local_date(api: ApiClient) -> None:
    # a zone where it is about noon now, so +10 min and +2 h are today there and +13 h is tomorrow
    offset = max(-12, min(14, 12 - datetime.now(UTC).hour))
    zone = f"Etc/GMT{-offset:+d}" if offset else "UTC"  # Etc/GMT-3 is UTC+3
    token, _ = await api.register(timezone=zone)
    await create(api, token, one_off("Soon", timedelta(minutes=10)))
    await create(api, token, one_off("Later today", timedelta(hours=2)))
    await create(api, token, one_off("Tomorrow", timedelta(hours=13)))
    assert (await api.execute(BADGES, token=token))["badges"] == {
        "reviewsWaiting": 0,
        "appealsWaiting": 0,
        "dueToday": 2,
    }
