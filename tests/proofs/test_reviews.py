"""Partner reviews over real HTTP: request, queue, decide (first decision wins), deadline, photo."""

from __future__ import annotations

import asyncio
from datetime import datetime, timedelta

import pytest

from harness import media_factory
from harness.chain_support import eventually
from harness.proofloop import (
    ApiClient,
    GraphQLFailure,
    WorkerProcess,
    act_before_deadline,
    create_open_task,
    local_http,
    open_schedule,
    partner_pair,
)
from tests.support.reviews import queue, request_review, review

CURRENT = "query($id: ID!) { task(id: $id) { currentInstance { id status } } }"


async def test_request_then_approve(api: ApiClient) -> None:
    owner_token, _, partner_token, partner_id = await partner_pair(api)
    task_id, instance_id = await create_open_task(api, owner_token, "PARTNER")
    requested = await request_review(api, owner_token, instance_id, note="did 40 push-ups")
    assert (requested["status"], requested["method"], requested["note"]) == (
        "PENDING_REVIEW",
        "PARTNER",
        "did 40 push-ups",
    )
    instance = requested["instance"]
    assert instance["status"] == "PENDING_REVIEW"
    deadline = datetime.fromisoformat(instance["reviewDeadline"])
    assert deadline - datetime.fromisoformat(instance["dueAt"]) == timedelta(seconds=3600)
    # the schedule runs on: the next occurrence is planned at once
    current = (await api.execute(CURRENT, {"id": task_id}, token=owner_token))["task"]["currentInstance"]
    assert current["id"] != instance_id and current["status"] == "PENDING"

    assert [v["id"] for v in await queue(api, partner_token)] == [requested["id"]]
    assert await queue(api, owner_token) == []

    decided = await review(api, partner_token, requested["id"], True)
    assert (decided["status"], decided["reason"], decided["reviewComment"]) == ("ACCEPTED", None, "seen it")
    assert decided["reviewer"]["id"] == partner_id and decided["decidedAt"] is not None
    assert decided["instance"]["status"] == "VERIFIED"
    assert await queue(api, partner_token) == []
    with pytest.raises(GraphQLFailure) as failure:
        await review(api, partner_token, requested["id"], False)
    assert failure.value.code == "CONFLICT"


async def test_reject_and_who_may_decide(api: ApiClient) -> None:
    owner_token, _, partner_token, _ = await partner_pair(api)
    stranger_token, _ = await api.register()
    _, instance_id = await create_open_task(api, owner_token, "PARTNER")
    requested = await request_review(api, owner_token, instance_id)
    for token, code in ((owner_token, "FORBIDDEN"), (stranger_token, "NOT_FOUND")):
        with pytest.raises(GraphQLFailure) as failure:
            await review(api, token, requested["id"], True)
        assert failure.value.code == code

    decided = await review(api, partner_token, requested["id"], False)
    assert (decided["status"], decided["reason"]) == ("REJECTED", "PARTNER_REJECTED")
    assert decided["instance"]["status"] == "REJECTED"


async def test_first_decision_wins(api: ApiClient) -> None:
    owner_token, _, first_token, _ = await partner_pair(api)
    second_token, second = await api.register_verified()
    invite = await api.execute(
        "mutation($e: String!) { invitePartner(email: $e) { id } }", {"e": second["email"]}, token=owner_token
    )
    await api.execute(
        "mutation($id: ID!) { respondToInvite(partnershipId: $id, accept: true) { id } }",
        {"id": invite["invitePartner"]["id"]},
        token=second_token,
    )
    _, instance_id = await create_open_task(api, owner_token, "PARTNER")
    requested = await request_review(api, owner_token, instance_id)
    outcomes = await asyncio.gather(
        review(api, first_token, requested["id"], True),
        review(api, second_token, requested["id"], False),
        return_exceptions=True,
    )
    wins = [o for o in outcomes if isinstance(o, dict)]
    losses = [o for o in outcomes if isinstance(o, GraphQLFailure)]
    assert len(wins) == 1 and [loss.code for loss in losses] == ["CONFLICT"]


async def test_decision_after_the_deadline_is_a_conflict(api: ApiClient) -> None:
    owner_token, _, partner_token, _ = await partner_pair(api)
    _, _, requested = await act_before_deadline(
        api,
        owner_token,
        "PARTNER",
        lambda instance: request_review(api, owner_token, instance),
        partnerReview={"reviewWindowSeconds": 1},
    )
    deadline = datetime.fromisoformat(requested["instance"]["reviewDeadline"])
    await asyncio.sleep(max(0.0, (deadline - datetime.now(deadline.tzinfo)).total_seconds()) + 0.3)
    with pytest.raises(GraphQLFailure) as failure:
        await review(api, partner_token, requested["id"], True)
    assert failure.value.code == "CONFLICT"


async def test_request_rules(api: ApiClient) -> None:
    owner_token, _, partner_token, _ = await partner_pair(api)
    _, photo_instance = await create_open_task(api, owner_token, "PHOTO")
    with pytest.raises(GraphQLFailure) as failure:
        await request_review(api, owner_token, photo_instance)
    assert (failure.value.code, failure.value.field) == ("BAD_USER_INPUT", "instanceId")

    _, later_instance = await create_open_task(
        api, owner_token, "PARTNER", schedule=open_schedule(starts_in_seconds=7200)
    )
    early = await request_review(api, owner_token, later_instance)
    assert (early["status"], early["reason"], early["instance"]["status"]) == (
        "REJECTED",
        "OUTSIDE_WINDOW",
        "PENDING",
    )

    _, instance_id = await create_open_task(api, owner_token, "PARTNER")
    with pytest.raises(GraphQLFailure) as failure:
        await request_review(api, partner_token, instance_id)  # only the owner asks
    assert failure.value.code == "FORBIDDEN"


async def test_request_with_a_photo_shows_it_to_the_partner(api: ApiClient) -> None:
    owner_token, _, partner_token, _ = await partner_pair(api)
    _, instance_id = await create_open_task(api, owner_token, "PARTNER")
    with pytest.raises(GraphQLFailure) as failure:
        await request_review(api, owner_token, instance_id, photo=b"not a photo")
    assert (failure.value.code, failure.value.field) == ("BAD_USER_INPUT", "photo")

    requested = await request_review(
        api, owner_token, instance_id, note="form check", photo=media_factory.photo(7)
    )
    assert requested["status"] == "PENDING_REVIEW"
    seen = await api.execute("query { reviewQueue { id mediaUrl thumbnailUrl } }", token=partner_token)
    (entry,) = seen["reviewQueue"]
    async with local_http(base_url=api.url) as client:
        response = await client.get(entry["mediaUrl"])
    assert (response.status_code, response.headers["content-type"]) == (200, "image/jpeg")


async def test_queue_is_oldest_first_and_capped(api: ApiClient) -> None:
    owner_token, _, partner_token, _ = await partner_pair(api)
    ids = []
    for _ in range(3):
        _, instance_id = await create_open_task(api, owner_token, "PARTNER")
        ids.append((await request_review(api, owner_token, instance_id))["id"])
    assert [v["id"] for v in await queue(api, partner_token)] == ids
    assert [v["id"] for v in await queue(api, partner_token, first=2)] == ids[:2]
    with pytest.raises(GraphQLFailure) as failure:
        await queue(api, partner_token, first=101)
    assert failure.value.code == "BAD_USER_INPUT"


@pytest.mark.parametrize(
    ("policy", "status", "verdict", "reason", "event"),
    [
        ("REJECT", "REJECTED", "REJECTED", "REVIEW_TIMED_OUT", "REJECTED"),
        ("APPROVE", "VERIFIED", "ACCEPTED", None, "VERIFIED"),
    ],
)
async def test_the_chain_applies_on_timeout_at_the_review_deadline(
    api: ApiClient,
    worker: WorkerProcess,
    policy: str,
    status: str,
    verdict: str,
    reason: str | None,
    event: str,
) -> None:
    owner_token, _, partner_token, _ = await partner_pair(api)
    _, instance_id, requested = await act_before_deadline(
        api,
        owner_token,
        "PARTNER",
        lambda instance: request_review(api, owner_token, instance),
        partnerReview={"reviewWindowSeconds": 2, "onTimeout": policy},
    )
    assert requested["instance"]["status"] == "PENDING_REVIEW"
    deadline = datetime.fromisoformat(requested["instance"]["reviewDeadline"])
    assert deadline == datetime.fromisoformat(requested["instance"]["dueAt"]) + timedelta(seconds=2)

    async def decided() -> bool:
        data = await api.execute(
            "query($id: ID!) { instance(id: $id) { status verifications { status reason } } }",
            {"id": instance_id},
            token=owner_token,
        )
        return bool(data["instance"]["status"] != "PENDING_REVIEW")

    await eventually(decided, 20, "the worker applied onTimeout at the review deadline")
    data = await api.execute(
        "query($id: ID!) { instance(id: $id) { status settledAt verifications { status reason } } }",
        {"id": instance_id},
        token=owner_token,
    )
    assert data["instance"]["status"] == status
    assert datetime.fromisoformat(data["instance"]["settledAt"]) >= deadline
    assert data["instance"]["verifications"] == [{"status": verdict, "reason": reason}]
    history = await api.execute("query { events { type instance { id } } }", token=partner_token)
    assert {"type": event, "instance": {"id": instance_id}} in history["events"]
    with pytest.raises(GraphQLFailure) as late:
        await review(api, partner_token, requested["id"], approve=True)
    assert late.value.code == "CONFLICT"
