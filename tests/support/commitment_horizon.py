"""The commitment horizon: setting it, rule edits that wait it out, and the checks the embedded-default and
exact-time tests repeat."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime
from typing import Any

from harness.chain_support import eventually
from harness.proofloop import (
    BERLIN,
    ApiClient,
    create_open_task,
)

DAY_SECONDS = "1"


NEAR = (52.53, 13.405)  # about 1.1 km north of BERLIN: outside 150 m, inside 2 km


TASK_FIELDS = """
  id title state
  gps { center { latitude longitude } radiusMeters maxAccuracyMeters }
  schedule { rrule windowSeconds graceSeconds }
  currentInstance { id status dueAt closesAt }
  owner { commitmentHorizon { days } }
  pendingChange {
    effectiveAt pause delete videoMinDurationSeconds
    schedule { startsAt rruleChanged rrule timezone windowSeconds graceSeconds }
    gps { centerChanged latitude longitude radiusMeters maxAccuracyMeters }
    partnerReview { reviewWindowSeconds onTimeout }
  }
"""


TASK = f"query($id: ID!) {{ task(id: $id) {{ {TASK_FIELDS} }} }}"


UPDATE = f"mutation($id: ID!, $input: UpdateTaskInput!) {{ updateTask(id: $id, input: $input) {{ {TASK_FIELDS} }} }}"


PAUSE = f"mutation($id: ID!) {{ pauseTask(id: $id) {{ {TASK_FIELDS} }} }}"


HORIZON = """mutation($days: Int!) {
  setCommitmentHorizon(days: $days) { commitmentHorizon { days loweringTo loweringAt } }
}"""


CHECK_IN = """mutation($id: ID!, $lat: Float!, $lon: Float!) {
  checkIn(instanceId: $id, location: {latitude: $lat, longitude: $lon}, accuracyMeters: 10) {
    status reason submittedAt
  }
}"""


INSTANCE = "query($id: ID!) { instance(id: $id) { status settledAt } }"


async def set_horizon(api: ApiClient, token: str, days: int) -> dict[str, Any]:
    result = (await api.execute(HORIZON, {"days": days}, token=token))["setCommitmentHorizon"]
    horizon: dict[str, Any] = result["commitmentHorizon"]
    return horizon


async def task_of(api: ApiClient, token: str, task_id: str) -> dict[str, Any] | None:
    task: dict[str, Any] | None = (await api.execute(TASK, {"id": task_id}, token=token))["task"]
    return task


async def update(api: ApiClient, token: str, task_id: str, **fields: Any) -> dict[str, Any]:
    task: dict[str, Any] = (await api.execute(UPDATE, {"id": task_id, "input": fields}, token=token))[
        "updateTask"
    ]
    return task


def gps_rule(radius: float, accuracy: float = 100, center: tuple[float, float] = BERLIN) -> dict[str, Any]:
    return {
        "center": {"latitude": center[0], "longitude": center[1]},
        "radiusMeters": radius,
        "maxAccuracyMeters": accuracy,
    }


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


async def proof_just_after_effective_at_meets_new_rules(api: ApiClient, token: str) -> None:
    """Shared with the embedded test: a bigger geofence waits, then judges a proof arriving right after."""
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


async def pause_waits_then_the_chain_applies_it(api: ApiClient, token: str) -> None:
    """Shared with the embedded test: a pause waits, and the pump applies it at effectiveAt."""
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
