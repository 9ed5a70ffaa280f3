"""Automatic proofs: a task connected to an integration, signed activity events and the verifications they
leave."""

from __future__ import annotations

import hashlib
import hmac
import json
import time
import uuid
from collections.abc import Mapping
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx

from harness.proofloop import (
    ApiClient,
    ServerProcess,
    create_open_task,
    local_http,
)

RULE = {"activityTypes": ["Run", "trail run"], "minDurationSeconds": 600, "minDistanceMeters": 3000}


CONNECT = """mutation($id: ID!) { connectIntegration(taskId: $id) {
  endpointUrl secret task { id integration { connected endpointUrl activityTypes } } } }"""


VERIFICATIONS = """query($id: ID!) { instance(id: $id) { status verifications {
  id method status reason activity { source type occurredAt durationSeconds distanceMeters externalId } } } }"""


class Sender:
    """A connector: signs events with the task's secret and POSTs them from one client address."""

    def __init__(self, url: str, secret: str) -> None:
        self.url, self.secret = url, secret
        hex_ = uuid.uuid4().hex
        self.address = f"2001:db8:{hex_[:4]}:{hex_[4:8]}::{hex_[8:12]}"  # documentation addresses
        self.headers = {"X-Forwarded-For": self.address}

    def signed(self, body: bytes, timestamp: int | None = None, secret: str | None = None) -> dict[str, str]:
        ts = str(int(time.time()) if timestamp is None else timestamp)
        digest = hmac.new((secret or self.secret).encode(), ts.encode() + b"." + body, hashlib.sha256)
        return {
            **self.headers,
            "Content-Type": "application/json",
            "X-Proofloop-Timestamp": ts,
            "X-Proofloop-Signature": f"sha256={digest.hexdigest()}",
        }

    async def post(
        self,
        body: bytes,
        headers: Mapping[str, str] | Mapping[bytes, bytes] | None = None,
        url: str | None = None,
    ) -> httpx.Response:
        async with local_http(timeout=10) as client:
            return await client.post(url or self.url, content=body, headers=headers or self.signed(body))

    async def send(self, event: dict[str, Any]) -> httpx.Response:
        return await self.post(json.dumps(event).encode())


def activity(**fields: Any) -> dict[str, Any]:
    """A run that counts: ended a minute ago, long and far enough."""
    event = {
        "id": f"run-{uuid.uuid4().hex[:12]}",
        "occurredAt": (datetime.now(UTC) - timedelta(minutes=1)).isoformat(),
        "type": "run",
        "durationSeconds": 1800,
        "distanceMeters": 5000,
        "source": "garmin",
    }
    event.update(fields)
    return {k: v for k, v in event.items() if v is not None}


def code_of(response: httpx.Response) -> str:
    code: str = response.json()["errors"][0]["extensions"]["code"]
    return code


async def connected_task(
    api: ApiClient, server: ServerProcess | str, token: str, rule: dict[str, Any] | None = None
) -> tuple[str, str, Sender]:
    """An INTEGRATION task open for proof now, connected: (task id, instance id, its sender)."""
    rules = {"integration": RULE if rule is None else rule}
    task_id, instance_id = await create_open_task(api, token, "INTEGRATION", **rules)
    connection = (await api.execute(CONNECT, {"id": task_id}, token=token))["connectIntegration"]
    assert connection["task"]["integration"]["connected"] is True
    assert connection["endpointUrl"] == connection["task"]["integration"]["endpointUrl"]
    path = connection["endpointUrl"].split("://", 1)[1].split("/", 1)[1]
    base = server if isinstance(server, str) else server.url
    return task_id, instance_id, Sender(f"{base}/{path}", connection["secret"])


async def verifications(api: ApiClient, token: str, instance_id: str) -> dict[str, Any]:
    instance: dict[str, Any] = (await api.execute(VERIFICATIONS, {"id": instance_id}, token=token))[
        "instance"
    ]
    return instance
