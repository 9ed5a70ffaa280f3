"""The events query: a task with a history of events to read back (shared with the paging tests)."""

from __future__ import annotations

import asyncio
import time
from datetime import UTC, datetime, timedelta
from typing import Any

import asyncpg

from harness.proofloop import ApiClient, event_id, row_key

CREATE_TASK = "mutation($input: CreateTaskInput!) { createTask(input: $input) { id currentInstance { id } } }"


TYPES = ["PROOF_SUBMITTED", "REVIEW_REQUESTED", "VERIFIED", "PROOF_SUBMITTED", "MISSED", "REJECTED"]


async def task_with_history(
    api: ApiClient, db: asyncpg.Connection, token: str, owner: dict[str, Any], title: str
) -> tuple[str, list[str]]:
    """A task of `owner` with one outbox event per TYPES entry; returns its id and the events' ids."""
    starts_at = (datetime.now(UTC) + timedelta(days=1)).isoformat()
    task = (
        await api.execute(
            CREATE_TASK,
            {
                "input": {
                    "title": title,
                    "method": "PHOTO",
                    "schedule": {"startsAt": starts_at, "rrule": "FREQ=DAILY"},
                }
            },
            token=token,
        )
    )["createTask"]
    rows = await db.fetch(
        "INSERT INTO events (type, occurred_at, user_id, task_id, instance_id, task_title, instance_status, due_at)"
        " SELECT t, now(), $2, $3, $4, $5, 'PENDING', now() FROM unnest($1::text[]) WITH ORDINALITY AS x(t, n)"
        " ORDER BY n RETURNING id",
        TYPES,
        row_key(owner["id"]),
        row_key(task["id"]),
        row_key(task["currentInstance"]["id"]),
        title,
    )
    event_ids = [row["id"] for row in rows]
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        positions = await db.fetch("SELECT position FROM events WHERE id = ANY($1) ORDER BY id", event_ids)
        if all(row["position"] is not None for row in positions):
            return task["id"], [event_id(row["position"]) for row in positions]
        await asyncio.sleep(0.2)
    raise AssertionError("the pump did not position the events")
