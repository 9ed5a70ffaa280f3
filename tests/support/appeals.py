"""Appeals: the appeal mutation, refusals and reading an instance's status and event types (shared with the
embedded-default appeals tests)."""

from __future__ import annotations

from typing import Any

import pytest

from harness.proofloop import (
    ApiClient,
    GraphQLFailure,
)

APPEAL = """mutation($v: ID, $i: ID, $note: String) {
  appeal(verificationId: $v, instanceId: $i, note: $note) {
    id status method note appealOf instance { id status reviewDeadline }
  }
}"""


REVIEW = """mutation($id: ID!, $approve: Boolean!) {
  review(verificationId: $id, approve: $approve) { status reason instance { status } }
}"""


INSTANCE = "query($id: ID!) { instance(id: $id) { status } }"


async def appeal(api: ApiClient, token: str, **ids: str | None) -> dict[str, Any]:
    variables = {"v": ids.get("verification"), "i": ids.get("instance"), "note": "the GPS was off"}
    result: dict[str, Any] = (await api.execute(APPEAL, variables, token=token))["appeal"]
    return result


async def refused(api: ApiClient, token: str, **ids: str | None) -> tuple[str, str | None]:
    with pytest.raises(GraphQLFailure) as failure:
        await appeal(api, token, **ids)
    return failure.value.code, failure.value.field


async def status_of(api: ApiClient, token: str, instance_id: str) -> str:
    return str((await api.execute(INSTANCE, {"id": instance_id}, token=token))["instance"]["status"])


async def event_types(api: ApiClient, token: str, instance_id: str) -> list[str]:
    events = (await api.execute("query { events(first: 100) { type instance { id } } }", token=token))[
        "events"
    ]
    return [e["type"] for e in events if e["instance"]["id"] == instance_id]
