"""Helpers for chain tests: short-interval tasks made through the API, rows read straight from SQL."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import asyncpg

from harness.proofloop import ApiClient, row_key
from models import VerificationMethod
from rules.recurrence import Schedule
from services.tasks.drafts import TaskDraft

CREATE = (
    "mutation($input: CreateTaskInput!) { createTask(input: $input) { id currentInstance { id dueAt } } }"
)


def short_schedule(start_in: float, every: int, window: int = 1) -> dict[str, Any]:
    starts_at = (datetime.now(UTC) + timedelta(seconds=start_in)).replace(microsecond=0) + timedelta(
        seconds=1
    )
    return {
        "startsAt": starts_at.isoformat(),
        "rrule": f"FREQ=SECONDLY;INTERVAL={every}",
        "timezone": "UTC",
        "windowSeconds": window,
        "graceSeconds": 0,
    }


async def create_short_task(
    api: ApiClient, token: str, *, start_in: float = 2, every: int = 2, title: str = "Short"
) -> dict[str, Any]:
    data = await api.execute(
        CREATE,
        {"input": {"title": title, "method": "PHOTO", "schedule": short_schedule(start_in, every)}},
        token=token,
    )
    task: dict[str, Any] = data["createTask"]
    return task


async def instances_of(db: asyncpg.Connection, task_id: str) -> list[asyncpg.Record]:
    rows: list[asyncpg.Record] = await db.fetch(
        "SELECT * FROM task_instances WHERE task_id = $1 ORDER BY seq", row_key(task_id)
    )
    return rows


async def settle_events(db: asyncpg.Connection, task_id: str) -> dict[str, int]:
    """How many settling events (MISSED/VERIFIED/REJECTED) each instance of the task has."""
    rows = await db.fetch(
        "SELECT instance_id::text AS id, COUNT(*) AS n FROM events WHERE task_id = $1"
        " AND type IN ('MISSED', 'VERIFIED', 'REJECTED') GROUP BY instance_id",
        row_key(task_id),
    )
    return {r["id"]: int(r["n"]) for r in rows}


async def eventually(check: Callable[[], Awaitable[bool]], timeout: float, what: str) -> None:
    """Poll until `check` holds; fail with `what` once `timeout` seconds pass."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if await check():
            return
        await asyncio.sleep(0.2)
    raise AssertionError(f"not within {timeout} s: {what}")


def photo_draft(
    *, title: str = "Daily", rrule: str | None = "FREQ=DAILY", window_seconds: int = 3600
) -> TaskDraft:
    """A PHOTO task starting tomorrow (beyond any link horizon), for tests that create tasks in-process."""
    return TaskDraft(
        title=title,
        description=None,
        method=VerificationMethod.PHOTO,
        schedule=Schedule(
            starts_at=datetime.now(UTC) + timedelta(days=1),
            rrule=rrule,
            timezone="UTC",
            window_seconds=window_seconds,
            grace_seconds=0,
        ),
    )
