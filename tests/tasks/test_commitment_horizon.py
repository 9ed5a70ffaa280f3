"""The commitment horizon through the real API and worker: easier edits wait (visible to the owner and
partners), harder ones apply at once, the chain applies a pending change at its effectiveAt, and a proof
arriving just after is judged by the new rules. A horizon "day" lasts one second here."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import pytest

from harness.chain_support import eventually
from harness.proofloop import ApiClient, GraphQLFailure, create_open_task, partner_pair
from tests.support.backends import Backend, Deployment, both_backends, deployed
from tests.support.commitment_horizon import (
    DAY_SECONDS,
    PAUSE,
    TASK_FIELDS,
    UPDATE,
    gps_rule,
    set_horizon,
    task_of,
    update,
)

RESUME = f"mutation($id: ID!) {{ resumeTask(id: $id) {{ {TASK_FIELDS} }} }}"
CANCEL = f"mutation($id: ID!) {{ cancelPendingChange(taskId: $id) {{ {TASK_FIELDS} }} }}"
DELETE = "mutation($id: ID!) { deleteTask(id: $id) }"
ME = "query { me { commitmentHorizon { days loweringTo loweringAt } } }"
INSTANCE = "query($id: ID!) { instance(id: $id) { status settledAt } }"
CHECK_IN = """mutation($id: ID!, $lat: Float!, $lon: Float!) {
  checkIn(instanceId: $id, location: {latitude: $lat, longitude: $lon}, accuracyMeters: 10) {
    status reason submittedAt
  }
}"""
NEAR = (52.53, 13.405)  # about 1.1 km north of BERLIN: outside 150 m, inside 2 km


@pytest.fixture(scope="module")
def horizon(request: pytest.FixtureRequest, backend: Backend) -> Iterator[Deployment]:
    """An API whose horizon days last a second, and the worker that applies what comes due."""
    with deployed(request, backend, {"PROOFLOOP_COMMITMENT_HORIZON_DAY_SECONDS": DAY_SECONDS}) as running:
        yield running


@pytest.fixture
def api(horizon: Deployment) -> ApiClient:
    return horizon.client()


async def check_in(
    api: ApiClient, token: str, instance_id: str, point: tuple[float, float]
) -> dict[str, Any]:
    variables = {"id": instance_id, "lat": point[0], "lon": point[1]}
    result: dict[str, Any] = (await api.execute(CHECK_IN, variables, token=token))["checkIn"]
    return result


async def sleep_until(moment: str) -> None:
    """Until just after `moment` (this host's clock is the database's: both run here)."""
    wait = (datetime.fromisoformat(moment) - datetime.now(UTC)).total_seconds()
    await asyncio.sleep(max(0.0, wait) + 0.05)


@both_backends
async def test_proof_just_after_effective_at_meets_new_rules(api: ApiClient) -> None:
    token, _ = await api.register()
    await set_horizon(api, token, 5)
    task_id, instance_id = await create_open_task(api, token, "GPS")
    edited = await update(api, token, task_id, title="Gym, nearby", gps=gps_rule(2000))
    assert edited["title"] == "Gym, nearby"  # neutral: at once
    assert edited["gps"]["radiusMeters"] == 150
    pending = edited["pendingChange"]
    assert pending["gps"] == {
        "centerChanged": False,
        "latitude": None,
        "longitude": None,
        "radiusMeters": 2000,
        "maxAccuracyMeters": None,
    }
    effective_at = datetime.fromisoformat(pending["effectiveAt"])  # parsed: "…:03Z" sorts after "…:03.5Z"
    early = await check_in(api, token, instance_id, NEAR)
    if datetime.fromisoformat(early["submittedAt"]) < effective_at:  # a machine this slow proves nothing here
        assert (early["status"], early["reason"]) == ("REJECTED", "OUTSIDE_GEOFENCE")
    await sleep_until(pending["effectiveAt"])
    proof = await check_in(api, token, instance_id, NEAR)
    assert datetime.fromisoformat(proof["submittedAt"]) >= effective_at
    assert (proof["status"], proof["reason"]) == ("ACCEPTED", None)
    task = await task_of(api, token, task_id)
    assert task is not None
    assert task["pendingChange"] is None
    assert task["gps"]["radiusMeters"] == 2000


@both_backends
async def test_pause_waits_then_the_chain_applies_it(api: ApiClient) -> None:
    token, _ = await api.register()
    await set_horizon(api, token, 2)
    task_id, instance_id = await create_open_task(api, token, "PHOTO")
    paused = (await api.execute(PAUSE, {"id": task_id}, token=token))["pauseTask"]
    assert paused["state"] == "ACTIVE"
    assert paused["pendingChange"]["pause"] is True
    assert paused["currentInstance"]["id"] == instance_id

    async def applied() -> bool:
        task = await task_of(api, token, task_id)
        return task is not None and task["state"] == "PAUSED"

    await eventually(applied, 20, "the pending pause applied by the chain")
    task = await task_of(api, token, task_id)
    assert task is not None
    assert (task["pendingChange"], task["currentInstance"]) == (None, None)
    instance = (await api.execute(INSTANCE, {"id": instance_id}, token=token))["instance"]
    assert instance["status"] == "CANCELED"
    assert datetime.fromisoformat(instance["settledAt"]) >= datetime.fromisoformat(
        paused["pendingChange"]["effectiveAt"]
    )


async def test_partners_see_the_pending_change_but_not_the_new_centre(api: ApiClient) -> None:
    owner_token, _, partner_token, _ = await partner_pair(api)
    await set_horizon(api, owner_token, 30)
    task_id, _ = await create_open_task(api, owner_token, "GPS")
    moved = await update(api, owner_token, task_id, gps=gps_rule(150, center=(52.6, 13.5)))
    assert moved["pendingChange"]["gps"]["centerChanged"] is True
    assert (moved["pendingChange"]["gps"]["latitude"], moved["pendingChange"]["gps"]["longitude"]) == (
        52.6,
        13.5,
    )
    seen = await task_of(api, partner_token, task_id)
    assert seen is not None
    assert seen["gps"]["center"] is None
    assert seen["pendingChange"]["gps"] == {
        "centerChanged": True,
        "latitude": None,
        "longitude": None,
        "radiusMeters": None,
        "maxAccuracyMeters": None,
    }
    assert seen["pendingChange"]["effectiveAt"] == moved["pendingChange"]["effectiveAt"]
    assert seen["owner"]["commitmentHorizon"] is None  # the owner's setting is the owner's alone
    stranger_token, _ = await api.register()
    with pytest.raises(GraphQLFailure) as hidden:
        await api.execute(CANCEL, {"id": task_id}, token=stranger_token)
    assert hidden.value.code == "NOT_FOUND"
    for document in (CANCEL, PAUSE, UPDATE):
        variables: dict[str, Any] = (
            {"id": task_id, "input": {"title": "x"}} if document is UPDATE else {"id": task_id}
        )
        with pytest.raises(GraphQLFailure) as refused:
            await api.execute(document, variables, token=partner_token)
        assert refused.value.code == "FORBIDDEN"


async def test_harder_edits_apply_at_once_and_a_mixed_edit_splits(api: ApiClient) -> None:
    token, _ = await api.register()
    await set_horizon(api, token, 30)
    task_id, _ = await create_open_task(api, token, "GPS")
    smaller = await update(api, token, task_id, gps=gps_rule(50), schedule={"windowSeconds": 1800})
    assert (smaller["gps"]["radiusMeters"], smaller["schedule"]["windowSeconds"]) == (50, 1800)
    assert smaller["pendingChange"] is None

    mixed = await update(api, token, task_id, gps=gps_rule(500, accuracy=20))
    assert (mixed["gps"]["radiusMeters"], mixed["gps"]["maxAccuracyMeters"]) == (50, 20)  # stricter now
    assert mixed["pendingChange"]["gps"]["radiusMeters"] == 500  # bigger later
    assert mixed["pendingChange"]["gps"]["maxAccuracyMeters"] is None

    # the latest edit of a field wins: a smaller radius now drops the bigger one waiting
    again = await update(api, token, task_id, gps=gps_rule(40, accuracy=20))
    assert again["gps"]["radiusMeters"] == 40
    assert again["pendingChange"] is None


async def test_a_second_easier_edit_merges_and_cancel_drops_it(api: ApiClient) -> None:
    token, _ = await api.register()
    await set_horizon(api, token, 30)
    task_id, _ = await create_open_task(api, token, "VIDEO")
    first = await update(api, token, task_id, schedule={"windowSeconds": 7200})
    second = await update(
        api, token, task_id, video={"minDurationSeconds": 1}, schedule={"graceSeconds": 120}
    )
    assert second["schedule"]["windowSeconds"] == 3600
    pending = second["pendingChange"]
    assert (pending["schedule"]["windowSeconds"], pending["schedule"]["graceSeconds"]) == (7200, 120)
    assert pending["videoMinDurationSeconds"] == 1
    # the merged change waits a full horizon from the latest easier edit
    assert datetime.fromisoformat(pending["effectiveAt"]) >= datetime.fromisoformat(
        first["pendingChange"]["effectiveAt"]
    )

    canceled = (await api.execute(CANCEL, {"id": task_id}, token=token))["cancelPendingChange"]
    assert canceled["pendingChange"] is None
    assert canceled["schedule"]["windowSeconds"] == 3600


async def test_fewer_occurrences_wait_and_the_chain_replans_at_effective_at(api: ApiClient) -> None:
    token, _ = await api.register()
    await set_horizon(api, token, 30)
    task_id, _ = await create_open_task(api, token, "PHOTO")
    edited = await update(
        api, token, task_id, schedule={"rrule": "FREQ=DAILY;COUNT=2", "windowSeconds": 1800}
    )
    assert (edited["schedule"]["rrule"], edited["schedule"]["windowSeconds"]) == ("FREQ=DAILY", 1800)
    assert edited["pendingChange"]["schedule"]["rruleChanged"] is True
    assert edited["pendingChange"]["schedule"]["rrule"] == "FREQ=DAILY;COUNT=2"
    assert edited["pendingChange"]["schedule"]["windowSeconds"] is None

    # more occurrences (COUNT raised over the daily rule's next ones) is harder: at once
    counted, _ = await create_open_task(api, token, "PHOTO")
    await update(api, token, counted, schedule={"rrule": "FREQ=DAILY;COUNT=3"})  # waits (fewer)
    await api.execute(CANCEL, {"id": counted}, token=token)
    harder = await update(api, token, counted, schedule={"rrule": "FREQ=DAILY;INTERVAL=1"})
    assert harder["schedule"]["rrule"] == "FREQ=DAILY;INTERVAL=1"  # the same due times: not easier
    assert harder["pendingChange"] is None

    # a longer grace on another task, with a short horizon: the chain re-plans the open instance
    await set_horizon(api, token, 0)  # lowering waits out the 30 s in force ...
    assert (await api.execute(ME, token=token))["me"]["commitmentHorizon"]["days"] == 30
    other, _ = await create_open_task(api, token, "PHOTO")
    graced = await update(api, token, other, schedule={"graceSeconds": 600})
    assert graced["schedule"]["graceSeconds"] == 60
    assert graced["pendingChange"]["schedule"]["graceSeconds"] == 600
    await api.execute(CANCEL, {"id": other}, token=token)


async def test_a_longer_grace_applies_by_the_chain_with_a_new_instance(api: ApiClient) -> None:
    token, _ = await api.register()
    await set_horizon(api, token, 2)
    task_id, instance_id = await create_open_task(api, token, "PHOTO")
    graced = await update(api, token, task_id, schedule={"graceSeconds": 600})
    assert graced["pendingChange"]["schedule"]["graceSeconds"] == 600

    async def applied() -> bool:
        task = await task_of(api, token, task_id)
        return task is not None and task["schedule"]["graceSeconds"] == 600

    await eventually(applied, 20, "the pending grace applied by the chain")
    task = await task_of(api, token, task_id)
    assert task is not None
    current = task["currentInstance"]
    assert current["id"] != instance_id  # a schedule change cancels and re-plans
    due, closes = datetime.fromisoformat(current["dueAt"]), datetime.fromisoformat(current["closesAt"])
    assert (closes - due).total_seconds() == 600


async def test_a_review_timeout_that_approves_waits(api: ApiClient) -> None:
    token, _ = await api.register()
    await set_horizon(api, token, 30)
    task_id, _ = await create_open_task(api, token, "PARTNER")  # 3600 s, REJECT
    approving = await update(
        api, token, task_id, partnerReview={"reviewWindowSeconds": 3600, "onTimeout": "APPROVE"}
    )
    assert approving["pendingChange"]["partnerReview"] == {
        "reviewWindowSeconds": 3600,
        "onTimeout": "APPROVE",
    }
    shorter = await update(
        api, token, task_id, partnerReview={"reviewWindowSeconds": 600, "onTimeout": "REJECT"}
    )
    assert shorter["pendingChange"] is None  # partners have less time to approve: harder, and it supersedes


async def test_resume_drops_a_waiting_pause_and_delete_waits(api: ApiClient) -> None:
    token, _ = await api.register()
    await set_horizon(api, token, 2)
    task_id, _ = await create_open_task(api, token, "PHOTO")
    await api.execute(PAUSE, {"id": task_id}, token=token)
    resumed = (await api.execute(RESUME, {"id": task_id}, token=token))["resumeTask"]
    assert (resumed["state"], resumed["pendingChange"]) == ("ACTIVE", None)

    assert (await api.execute(DELETE, {"id": task_id}, token=token))["deleteTask"] is True
    waiting = await task_of(api, token, task_id)
    assert waiting is not None
    assert waiting["pendingChange"]["delete"] is True

    async def deleted() -> bool:
        return await task_of(api, token, task_id) is None

    await eventually(deleted, 20, "the pending deletion applied by the chain")


async def test_horizon_zero_applies_everything_at_once(api: ApiClient) -> None:
    token, _ = await api.register()
    assert (await api.execute(ME, token=token))["me"]["commitmentHorizon"] == {
        "days": 0,
        "loweringTo": None,
        "loweringAt": None,
    }
    task_id, _ = await create_open_task(api, token, "GPS")
    easier = await update(api, token, task_id, gps=gps_rule(2000), schedule={"graceSeconds": 600})
    assert (easier["gps"]["radiusMeters"], easier["schedule"]["graceSeconds"]) == (2000, 600)
    assert easier["pendingChange"] is None
    paused = (await api.execute(PAUSE, {"id": task_id}, token=token))["pauseTask"]
    assert (paused["state"], paused["pendingChange"]) == ("PAUSED", None)


async def test_the_horizon_setting_is_bounded_and_lowering_it_waits(api: ApiClient) -> None:
    token, _ = await api.register()
    for days in (-1, 31, 2**31 - 1):
        with pytest.raises(GraphQLFailure) as refused:
            await set_horizon(api, token, days)
        assert (refused.value.code, refused.value.field) == ("BAD_USER_INPUT", "days")
    assert (await set_horizon(api, token, 7))["days"] == 7
    lowered = await set_horizon(api, token, 3)
    assert (lowered["days"], lowered["loweringTo"]) == (7, 3)
    assert await set_horizon(api, token, 9) == {"days": 9, "loweringTo": None, "loweringAt": None}
