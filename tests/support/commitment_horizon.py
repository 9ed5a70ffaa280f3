"""The commitment horizon: setting it and editing a task under it, as several test modules do."""

from __future__ import annotations

from typing import Any

from harness.proofloop import (
    BERLIN,
    ApiClient,
)

DAY_SECONDS = "1"


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
