"""Avoid-a-place tasks: the rule, location samples and reports, and reading the verdict (shared with the
timestamp tests)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from harness.chain_support import eventually
from harness.proofloop import BERLIN, ApiClient

REPORT = """mutation($id: ID!, $s: [LocationSampleInput!]!) {
  reportLocations(instanceId: $id, samples: $s) { accepted ignored total } }"""


INSTANCE = """query($id: ID!) { instance(id: $id) { status verifications {
  method status reason enteredAt location { latitude } distanceMeters } } }"""


OUTSIDE = (BERLIN[0] + 0.01, BERLIN[1])  # ~1.1 km north of the 150 m place


GAP = 60


def avoid_rule(gap: int = GAP) -> dict[str, Any]:
    center = {"latitude": BERLIN[0], "longitude": BERLIN[1]}
    return {
        "center": center,
        "radiusMeters": 150,
        "maxAccuracyMeters": 50,
        "avoid": True,
        "maxSampleGapSeconds": gap,
    }


def soon(window_seconds: int) -> dict[str, Any]:
    """Due in 4 s, its window open for window_seconds already; 2 s of grace for the last batch."""
    starts = (datetime.now(UTC) + timedelta(seconds=4)).replace(microsecond=0)
    return {
        "startsAt": starts.isoformat(),
        "rrule": "FREQ=DAILY",
        "timezone": "UTC",
        "windowSeconds": window_seconds,
        "graceSeconds": 2,
    }


def sample(point: tuple[float, float], seconds_ago: float, accuracy: float = 10.0) -> dict[str, Any]:
    at = datetime.now(UTC) - timedelta(seconds=seconds_ago)
    return {
        "latitude": point[0],
        "longitude": point[1],
        "accuracyMeters": accuracy,
        "recordedAt": at.isoformat(),
    }


async def report(
    api: ApiClient, token: str, instance_id: str, samples: list[dict[str, Any]]
) -> dict[str, Any]:
    result: dict[str, Any] = (await api.execute(REPORT, {"id": instance_id, "s": samples}, token=token))[
        "reportLocations"
    ]
    return result


async def judged(api: ApiClient, token: str, instance_id: str) -> dict[str, Any]:
    async def settled() -> bool:
        status: str = (await api.execute(INSTANCE, {"id": instance_id}, token=token))["instance"]["status"]
        return status != "PENDING"

    await eventually(settled, 20, "the chain judged the instance at its deadline")
    instance: dict[str, Any] = (await api.execute(INSTANCE, {"id": instance_id}, token=token))["instance"]
    return instance
