"""GPS proofs: a check-in at a known place."""

from __future__ import annotations

from typing import Any

from harness.proofloop import BERLIN, ApiClient

CHECK_IN = """mutation($id: ID!, $lat: Float!, $lon: Float!, $acc: Float!, $at: DateTime) {
  checkIn(instanceId: $id, location: {latitude: $lat, longitude: $lon}, accuracyMeters: $acc, recordedAt: $at) {
    id status reason method submittedAt decidedAt distanceMeters retryAfterSeconds location { latitude longitude }
    instance { id status settledAt }
  }
}"""


MUNICH = (48.137, 11.575)


async def check_in(
    api: ApiClient,
    token: str,
    instance_id: str,
    point: tuple[float, float] = BERLIN,
    accuracy: float = 10.0,
    recorded_at: str | None = None,
) -> dict[str, Any]:
    variables = {"id": instance_id, "lat": point[0], "lon": point[1], "acc": accuracy, "at": recorded_at}
    result: dict[str, Any] = (await api.execute(CHECK_IN, variables, token=token))["checkIn"]
    return result
