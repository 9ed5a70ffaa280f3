"""Partner changes under the commitment horizon, shared by tests/partners/test_partner_horizon.py (on
PostgreSQL) and tests/partners/test_partner_horizon_embedded.py (on the embedded default)."""

from __future__ import annotations

from typing import Any

import pytest

from harness.chain_support import eventually
from harness.proofloop import (
    ApiClient,
    GraphQLFailure,
    act_before_deadline,
    create_open_task,
    partner_pair,
)
from tests.support.commitment_horizon import set_horizon
from tests.support.reviews import queue, request_review, review

PARTNERSHIPS = "query { partnerships { id status partner { id } } }"
INVITE = "mutation($e: String!) { invitePartner(email: $e) { id } }"
ACCEPT = "mutation($id: ID!) { respondToInvite(partnershipId: $id, accept: true) { status } }"
REMOVE = "mutation($id: ID!) { removePartner(partnershipId: $id) }"
TASK = "query($id: ID!) { task(id: $id) { id } }"
INSTANCE = "query($id: ID!) { instance(id: $id) { status verifications { status reason } } }"


async def partnership_with(api: ApiClient, token: str, partner_id: str) -> dict[str, Any]:
    rows = (await api.execute(PARTNERSHIPS, token=token))["partnerships"]
    return next(row for row in rows if row["partner"] and row["partner"]["id"] == partner_id)


async def add_partner(api: ApiClient, owner_token: str) -> tuple[str, str]:
    """Another verified account of the owner's choosing accepts: (its token, its id)."""
    token, user = await api.register_verified()
    invite = await api.execute(INVITE, {"e": user["email"]}, token=owner_token)
    await api.execute(ACCEPT, {"id": invite["invitePartner"]["id"]}, token=token)
    return token, user["id"]


async def settled(api: ApiClient, token: str, instance_id: str) -> dict[str, Any]:
    async def decided() -> bool:
        data = await api.execute(INSTANCE, {"id": instance_id}, token=token)
        return bool(data["instance"]["status"] != "PENDING_REVIEW")

    await eventually(decided, 30, "the worker applied onTimeout at the review deadline")
    instance: dict[str, Any] = (await api.execute(INSTANCE, {"id": instance_id}, token=token))["instance"]
    return instance


async def removing_the_partner_under_a_review_that_approves_on_timeout_never_verifies(
    api: ApiClient, days: int
) -> None:
    owner_token, _, _, partner_id = await partner_pair(api)
    await set_horizon(api, owner_token, days)
    _, instance_id, requested = await act_before_deadline(
        api,
        owner_token,
        "PARTNER",
        lambda instance: request_review(api, owner_token, instance),
        partnerReview={"reviewWindowSeconds": 2, "onTimeout": "APPROVE"},
    )
    partnership = await partnership_with(api, owner_token, partner_id)
    assert (await api.execute(REMOVE, {"id": partnership["id"]}, token=owner_token))["removePartner"]
    instance = await settled(api, owner_token, instance_id)
    assert instance == {
        "status": "REJECTED",
        "verifications": [{"status": "REJECTED", "reason": "REVIEW_TIMED_OUT"}],
    }
    with pytest.raises(GraphQLFailure):
        await review(api, owner_token, requested["id"], approve=True)


async def a_removal_waits_out_the_horizon_and_the_partner_keeps_deciding(api: ApiClient) -> None:
    owner_token, _, partner_token, partner_id = await partner_pair(api)
    await set_horizon(api, owner_token, 4)
    task_id, instance_id = await create_open_task(api, owner_token, "PARTNER")
    partnership = await partnership_with(api, owner_token, partner_id)
    await api.execute(REMOVE, {"id": partnership["id"]}, token=owner_token)
    assert (await partnership_with(api, owner_token, partner_id))["status"] == "ACTIVE"
    assert (await api.execute(TASK, {"id": task_id}, token=partner_token))["task"] == {"id": task_id}
    requested = await request_review(api, owner_token, instance_id)
    decided = await review(api, partner_token, requested["id"], approve=True)
    assert decided["instance"]["status"] == "VERIFIED"

    async def removed() -> bool:
        return (await api.execute(TASK, {"id": task_id}, token=partner_token))["task"] is None

    await eventually(removed, 20, "the removal applied once the horizon passed")
    assert (await partnership_with(api, owner_token, partner_id))["status"] == "REMOVED"
    with pytest.raises(GraphQLFailure) as again:
        await api.execute(REMOVE, {"id": partnership["id"]}, token=owner_token)
    assert again.value.code == "CONFLICT"


async def swapping_partners_waits_the_new_one_watches_but_decides_later(api: ApiClient) -> None:
    owner_token, _, honest_token, honest_id = await partner_pair(api)
    await set_horizon(api, owner_token, 30)
    task_id, instance_id = await create_open_task(api, owner_token, "PARTNER")
    honest = await partnership_with(api, owner_token, honest_id)
    await api.execute(REMOVE, {"id": honest["id"]}, token=owner_token)
    own_token, _ = await add_partner(api, owner_token)
    assert (await api.execute(TASK, {"id": task_id}, token=own_token))["task"] == {"id": task_id}
    requested = await request_review(api, owner_token, instance_id)
    assert await queue(api, own_token) == []  # it lists what the viewer may decide
    assert [row["id"] for row in await queue(api, honest_token)] == [requested["id"]]
    with pytest.raises(GraphQLFailure) as held_back:
        await review(api, own_token, requested["id"], approve=True)
    assert held_back.value.code == "FORBIDDEN"
    still = await api.execute(INSTANCE, {"id": instance_id}, token=owner_token)
    assert still["instance"]["status"] == "PENDING_REVIEW"
    decided = await review(api, honest_token, requested["id"], approve=False)
    assert decided["instance"]["status"] == "REJECTED"
