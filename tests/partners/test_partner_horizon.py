"""Partner changes under the commitment horizon, through the real API and worker: removing a partner waits
out the horizon (the partner keeps watching and deciding), a partner accepted beside another watches at
once but decides only once the horizon has passed (a first partner at once), and a review's timeout never
approves without a partner able to decide who is staying. A horizon "day" lasts one second here."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime, timedelta
from typing import Any

import pytest

from harness.chain_support import eventually
from harness.proofloop import ApiClient, GraphQLFailure, act_before_deadline, create_open_task, partner_pair
from tests.support.backends import Backend, Deployment, both_backends, deployed
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


@pytest.fixture(scope="module")
def horizon(request: pytest.FixtureRequest, backend: Backend) -> Iterator[Deployment]:
    with deployed(request, backend, {"PROOFLOOP_COMMITMENT_HORIZON_DAY_SECONDS": "1"}) as running:
        yield running


@pytest.fixture
def api(horizon: Deployment) -> ApiClient:
    return horizon.client()


@both_backends
@pytest.mark.parametrize("days", [0, 30])
async def test_removing_the_partner_under_a_review_that_approves_on_timeout_never_verifies(
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


@both_backends
async def test_a_removal_waits_out_the_horizon_and_the_partner_keeps_deciding(api: ApiClient) -> None:
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


@both_backends
async def test_swapping_partners_waits_the_new_one_watches_but_decides_later(api: ApiClient) -> None:
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


async def test_a_held_back_partner_decides_once_the_horizon_has_passed(api: ApiClient) -> None:
    owner_token, _, _, _ = await partner_pair(api)
    await set_horizon(api, owner_token, 3)
    _, instance_id = await create_open_task(api, owner_token, "PARTNER")
    second_token, _ = await add_partner(api, owner_token)
    requested = await request_review(api, owner_token, instance_id)
    with pytest.raises(GraphQLFailure) as held_back:
        await review(api, second_token, requested["id"], approve=True)
    assert held_back.value.code == "FORBIDDEN"
    later = datetime.now().astimezone() + timedelta(seconds=4)

    async def may_decide() -> bool:
        if datetime.now().astimezone() < later:
            return False
        try:
            await review(api, second_token, requested["id"], approve=True)
        except GraphQLFailure:
            return False
        return True

    await eventually(may_decide, 20, "the held-back partner decides once the horizon has passed")
    assert (await api.execute(INSTANCE, {"id": instance_id}, token=owner_token))["instance"][
        "status"
    ] == "VERIFIED"


async def test_a_first_partner_is_never_held_back(api: ApiClient) -> None:
    owner_token, _ = await api.register()
    await set_horizon(api, owner_token, 30)
    partner_token, _ = await add_partner(api, owner_token)
    _, instance_id = await create_open_task(api, owner_token, "PARTNER")
    requested = await request_review(api, owner_token, instance_id)
    decided = await review(api, partner_token, requested["id"], approve=True)
    assert decided["instance"]["status"] == "VERIFIED"
