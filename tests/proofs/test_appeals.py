"""Appeals through the real API and worker: an automated rejection overturned, the window, one per instance,
a denied appeal, and onTimeout at an appeal's own deadline."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from harness.chain_support import eventually
from harness.proofloop import (
    ApiClient,
    GraphQLFailure,
    act_before_deadline,
    create_open_task,
    partner_pair,
    row_key,
)
from tests.support.backends import Deployment, both_backends
from tests.support.live import Feed, live_feed
from tests.support.proofs_gps import MUNICH, check_in

TASK = "query($id: ID!) { task(id: $id) { streak currentInstance { id dueAt } progress { r: completionRate(days: 7) } } }"


@pytest.fixture
def api(deployment: Deployment) -> ApiClient:
    return deployment.client()


APPEAL = """mutation($v: ID, $i: ID, $note: String) {
  appeal(verificationId: $v, instanceId: $i, note: $note) {
    id status method note appealOf instance { id status reviewDeadline }
  }
}"""


REVIEW = """mutation($id: ID!, $approve: Boolean!) {
  review(verificationId: $id, approve: $approve) { status reason instance { status } }
}"""


INSTANCE = "query($id: ID!) { instance(id: $id) { status } }"
VERDICT = """query($id: ID!) { instance(id: $id) {
  verdict { outcome reason appealableUntil isFinal proofs { id } reviewer { id } }
} }"""


async def appeal(api: ApiClient, token: str, **ids: str | None) -> dict[str, Any]:
    variables = {"v": ids.get("verification"), "i": ids.get("instance"), "note": "the GPS was off"}
    result: dict[str, Any] = (await api.execute(APPEAL, variables, token=token))["appeal"]
    return result


async def refused(api: ApiClient, token: str, **ids: str | None) -> tuple[str, str | None]:
    with pytest.raises(GraphQLFailure) as failure:
        await appeal(api, token, **ids)
    return failure.value.code, failure.value.field


async def verdict_of(api: ApiClient, token: str, instance_id: str) -> dict[str, Any]:
    found: dict[str, Any] = (await api.execute(VERDICT, {"id": instance_id}, token=token))["instance"][
        "verdict"
    ]
    return found


async def status_of(api: ApiClient, token: str, instance_id: str) -> str:
    return str((await api.execute(INSTANCE, {"id": instance_id}, token=token))["instance"]["status"])


async def event_types(api: ApiClient, token: str, instance_id: str) -> list[str]:
    events = (await api.execute("query { events(first: 100) { type instance { id } } }", token=token))[
        "events"
    ]
    return [e["type"] for e in events if e["instance"]["id"] == instance_id]


async def settle(deployment: Deployment, instance_id: str, status: str, hours_ago: float) -> None:
    """Settle an instance as the chain would have, `hours_ago` (the read of the settlement is under test)."""
    await deployment.sql(
        "UPDATE task_instances SET status = $2, settled_at = $3, fire_at = NULL, link_for = NULL WHERE id = $1",
        row_key(instance_id),
        status,
        datetime.now(UTC) - timedelta(hours=hours_ago),
    )


@both_backends
async def test_an_upheld_appeal_verifies_a_missed_instance_without_moving_the_chain(api: ApiClient) -> None:
    owner, _, partner, partner_id = await partner_pair(api)
    stranger, _ = await api.register()
    task_id, instance_id, rejected = await act_before_deadline(
        api, owner, "GPS", lambda instance: check_in(api, owner, instance, MUNICH)
    )
    assert (rejected["status"], rejected["reason"]) == ("REJECTED", "OUTSIDE_GEOFENCE")

    async def missed() -> bool:
        return await status_of(api, owner, instance_id) == "MISSED"

    await eventually(missed, 20, "the worker settled the instance MISSED at its deadline")
    before = (await api.execute(TASK, {"id": task_id}, token=owner))["task"]
    assert before["currentInstance"]["id"] != instance_id and before["streak"] == 0
    missed_verdict = await verdict_of(api, partner, instance_id)
    # the deadline decided it, not the rejected check-in: appealable for the window
    assert (missed_verdict["outcome"], missed_verdict["reason"], missed_verdict["proofs"]) == (
        "MISSED",
        "NO_PROOF",
        [],
    )
    assert missed_verdict["appealableUntil"] is not None and missed_verdict["isFinal"] is False

    assert await refused(api, stranger, verification=rejected["id"]) == ("NOT_FOUND", None)
    assert (await refused(api, partner, verification=rejected["id"]))[0] == "FORBIDDEN"
    assert await refused(api, owner, verification=rejected["id"], instance=instance_id) == (
        "BAD_USER_INPUT",
        "verificationId",
    )

    review = await appeal(api, owner, verification=rejected["id"])
    assert (review["status"], review["method"], review["appealOf"]) == ("PENDING_REVIEW", "PARTNER", "MISSED")
    assert review["instance"]["status"] == "PENDING_REVIEW" and review["instance"]["reviewDeadline"]
    queue = (await api.execute("query { reviewQueue { id note } }", token=partner))["reviewQueue"]
    assert {"id": review["id"], "note": "the GPS was off"} in queue
    assert (await refused(api, owner, verification=rejected["id"]))[0] == "CONFLICT"
    assert (await refused(api, owner, instance=instance_id))[0] == "CONFLICT"

    decided = (await api.execute(REVIEW, {"id": review["id"], "approve": True}, token=partner))["review"]
    assert (decided["status"], decided["instance"]["status"]) == ("ACCEPTED", "VERIFIED")
    after = (await api.execute(TASK, {"id": task_id}, token=partner))["task"]
    # the next instance stays as planned; the streak and progress read the new outcome
    assert after["currentInstance"] == before["currentInstance"]
    assert (after["streak"], after["progress"]["r"]) == (1, 1.0)
    upheld = await verdict_of(api, owner, instance_id)
    assert (upheld["outcome"], upheld["reason"], upheld["proofs"]) == (
        "VERIFIED",
        "APPEAL_UPHELD",
        [{"id": review["id"]}],
    )
    assert upheld["reviewer"] == {"id": partner_id} and upheld["isFinal"] is True
    assert (await refused(api, owner, instance=instance_id))[0] == "CONFLICT"
    # a partner's decision is no automated rejection; a stranger learns nothing of it
    assert (await refused(api, owner, verification=review["id"]))[0] == "CONFLICT"
    assert (await refused(api, stranger, verification=review["id"]))[0] == "NOT_FOUND"
    types = await event_types(api, partner, instance_id)
    assert types.index("MISSED") < types.index("APPEAL_REQUESTED") < types.index("APPEAL_DECIDED")


async def next_of(feed: Feed, instance_id: str) -> dict[str, Any]:
    while True:
        event = await feed.next()
        if event["instance"]["id"] == instance_id:
            return event


async def test_the_window_what_may_be_appealed_and_a_denied_appeal(
    api: ApiClient, deployment: Deployment
) -> None:
    owner, owner_id, partner, _ = await partner_pair(api)
    _, late = await create_open_task(api, owner, "PHOTO")
    _, recent = await create_open_task(api, owner, "PHOTO")
    _, still_open = await create_open_task(api, owner, "PHOTO")
    await settle(deployment, late, "MISSED", hours_ago=49)  # the default window is 48 h
    await settle(deployment, recent, "MISSED", hours_ago=1)

    assert (await refused(api, owner, instance=late))[0] == "CONFLICT"
    assert (await refused(api, owner, instance=still_open))[0] == "CONFLICT"
    assert await status_of(api, owner, late) == "MISSED"

    # from the start: a live-only feed may register after the appeal's event, which it would then never see
    async with live_feed(deployment.server, partner, userId=owner_id, after="0") as feed:
        review = await appeal(api, owner, instance=recent)
        requested = await next_of(feed, recent)
        assert (requested["type"], requested["instanceStatus"]) == ("APPEAL_REQUESTED", "PENDING_REVIEW")
        decided = (await api.execute(REVIEW, {"id": review["id"], "approve": False}, token=partner))["review"]
        told = await next_of(feed, recent)
        assert (told["type"], told["instanceStatus"]) == ("APPEAL_DECIDED", "MISSED")
    # denied: the instance keeps the outcome it had, and the instance has had its one appeal
    assert (decided["status"], decided["reason"], decided["instance"]["status"]) == (
        "REJECTED",
        "PARTNER_REJECTED",
        "MISSED",
    )
    assert (await refused(api, owner, instance=recent))[0] == "CONFLICT"
    assert (await event_types(api, owner, recent))[-2:] == ["APPEAL_REQUESTED", "APPEAL_DECIDED"]
    denied = await verdict_of(api, owner, recent)
    assert (denied["outcome"], denied["reason"], denied["proofs"]) == (
        "MISSED",
        "APPEAL_DENIED",
        [{"id": review["id"]}],
    )
    assert (denied["appealableUntil"], denied["isFinal"]) == (None, True)  # one appeal per instance


@both_backends
async def test_on_timeout_decides_an_appeal_at_its_deadline(api: ApiClient, deployment: Deployment) -> None:
    owner, _, partner, _ = await partner_pair(api)
    _, instance_id = await create_open_task(
        api, owner, "PARTNER", partnerReview={"reviewWindowSeconds": 2, "onTimeout": "APPROVE"}
    )
    await settle(deployment, instance_id, "MISSED", hours_ago=0.1)
    review = await appeal(api, owner, instance=instance_id)
    assert review["appealOf"] == "MISSED"

    async def decided() -> bool:
        return await status_of(api, owner, instance_id) != "PENDING_REVIEW"

    await eventually(decided, 20, "the worker applied onTimeout at the appeal's deadline")
    assert await status_of(api, partner, instance_id) == "VERIFIED"

    async def told() -> bool:  # an event is readable once positioned, just after its commit
        return (await event_types(api, partner, instance_id))[-1] == "APPEAL_DECIDED"

    await eventually(told, 10, "the partner reads the decision")
    with pytest.raises(GraphQLFailure) as late:
        await api.execute(REVIEW, {"id": review["id"], "approve": False}, token=partner)
    assert late.value.code == "CONFLICT"
