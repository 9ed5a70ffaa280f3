"""A retrying client as a phone on a bad network is one: documents of several taskCreate fields, each sent
with its own Idempotency-Key, given up after a short wait and sent again (the very request, the same key)
until an answer with data comes; a refusal that says "try again" (503 SERVICE_UNAVAILABLE, 409 for a copy
still running) is retried after the time it names. Shared by tests/chaos and bench/keyed_retries.py."""

from __future__ import annotations

import asyncio
import json
import time
import uuid
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx

from harness.proofloop import local_http, row_key

DOCUMENT_TASKS = 5
_FIELDS = " ".join(
    f"t{n}: taskCreate(input: $t{n}) {{ task {{ id }} userErrors {{ code message }} }}"
    for n in range(DOCUMENT_TASKS)
)
DOCUMENT = (
    "mutation("
    + ", ".join(f"$t{n}: TaskCreateInput!" for n in range(DOCUMENT_TASKS))
    + ") { "
    + _FIELDS
    + " }"
)
# how long one document may take in all, copies and waits included
_GIVE_UP_SECONDS = 90.0


@dataclass
class Sent:
    """What the client saw: each document's created task ids (by key), and every answer by kind."""

    created: dict[str, list[str]] = field(default_factory=dict)
    attempts: int = 0
    abandoned: int = 0  # copies the client stopped waiting for (its timeout)
    replayed: int = 0  # answers with Idempotent-Replayed: true
    running_elsewhere: int = 0  # 409: a copy of the same request still running
    unavailable: int = 0  # SERVICE_UNAVAILABLE
    other: list[str] = field(default_factory=list)

    @staticmethod
    def row_key(global_id: str) -> str:
        return row_key(global_id)

    def describe(self) -> str:
        return (
            f"{len(self.created)} documents answered in {self.attempts} attempts: {self.abandoned} abandoned,"
            f" {self.replayed} replayed, {self.running_elsewhere} told a copy was running,"
            f" {self.unavailable} SERVICE_UNAVAILABLE; other: {self.other[:5]}"
        )


def _variables(index: int) -> dict[str, Any]:
    starts = (datetime.now(UTC) + timedelta(hours=1)).replace(microsecond=0).isoformat()
    schedule = {"startsAt": starts, "rrule": "FREQ=DAILY", "windowSeconds": 600}
    return {
        f"t{n}": {"title": f"doc {index} task {n}", "method": "PHOTO", "schedule": schedule}
        for n in range(DOCUMENT_TASKS)
    }


async def _send_one(
    http: httpx.AsyncClient, token: str, index: int, sent: Sent, client_timeout: float
) -> None:
    key = str(uuid.uuid4())
    body = json.dumps({"query": DOCUMENT, "variables": _variables(index)})  # every copy sends these bytes
    headers = {"Authorization": f"Bearer {token}", "Idempotency-Key": key, "Content-Type": "application/json"}
    deadline = time.monotonic() + _GIVE_UP_SECONDS
    while time.monotonic() < deadline:
        sent.attempts += 1
        try:
            answer = await http.post("/graphql", content=body, headers=headers, timeout=client_timeout)
        except httpx.TimeoutException:
            sent.abandoned += 1
            continue
        wait = float(answer.headers.get("retry-after", "0.5"))
        payload = answer.json()
        codes = [e.get("extensions", {}).get("code") for e in payload.get("errors") or []]
        if "SERVICE_UNAVAILABLE" in codes:
            sent.unavailable += 1
            await asyncio.sleep(wait)
            continue
        if answer.status_code == 409:
            sent.running_elsewhere += 1
            await asyncio.sleep(min(wait, 1.0))
            continue
        data = payload.get("data")
        if answer.status_code != 200 or not data:
            sent.other.append(f"{answer.status_code} {answer.text[:200]}")
            return
        if answer.headers.get("idempotent-replayed") == "true":
            sent.replayed += 1
        fields = [data[f"t{n}"] for n in range(DOCUMENT_TASKS)]
        if any(f["userErrors"] for f in fields):
            sent.other.append(json.dumps([f["userErrors"] for f in fields])[:200])
        sent.created[key] = [f["task"]["id"] for f in fields if f["task"]]
        return
    sent.other.append(f"document {index}: no answer within {_GIVE_UP_SECONDS:.0f} s")


async def send_documents(
    url: str, token: str, documents: int, *, client_timeout: float, sent: Sent | None = None
) -> Sent:
    """`documents` documents sent at once, each retried with its key until it is answered (counted into
    `sent` when given, so rounds add up)."""
    sent = sent if sent is not None else Sent()
    first = len(sent.created) + len(sent.other)
    async with local_http(base_url=url) as http:
        await asyncio.gather(
            *(_send_one(http, token, first + n, sent, client_timeout) for n in range(documents))
        )
    return sent
