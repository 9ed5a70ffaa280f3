"""Edits racing in-flight links: pause, resume and schedule changes while the worker fires.

Whatever the interleaving, every ACTIVE task ends with exactly one PENDING instance, a PAUSED one with
none, no instance is settled twice, and no row keeps owed work past its fire_at plus the pump's reach.
"""

from __future__ import annotations

import asyncio
import random
from datetime import UTC, datetime, timedelta
from typing import Any

import asyncpg

from harness.chain_support import create_short_task, instances_of, settle_events, short_schedule
from harness.proofloop import ApiClient, GraphQLFailure, WorkerProcess, row_key

TASKS = 6
EDITS = 60
OWED_WORK_BOUND = timedelta(seconds=6)  # pump interval + overdue allowance + a margin


async def _edit(api: ApiClient, token: str, task_id: str, rng: random.Random) -> None:
    choice = rng.choice(["pause", "resume", "reschedule", "retitle"])
    try:
        if choice == "pause":
            await api.execute(
                "mutation($id: ID!) { pauseTask(id: $id) { id } }", {"id": task_id}, token=token
            )
        elif choice == "resume":
            await api.execute(
                "mutation($id: ID!) { resumeTask(id: $id) { id } }", {"id": task_id}, token=token
            )
        else:
            patch: dict[str, Any] = {"title": f"t{rng.randint(0, 999)}"}
            if choice == "reschedule":
                patch["schedule"] = {**short_schedule(rng.uniform(0, 2), rng.choice([1, 2, 3]))}
            await api.execute(
                "mutation($id: ID!, $input: UpdateTaskInput!) { updateTask(id: $id, input: $input) { id } }",
                {"id": task_id, "input": patch},
                token=token,
            )
    except GraphQLFailure as failure:
        assert failure.code == "CONFLICT", failure.errors  # e.g. resuming an ENDED task


async def test_edits_racing_links_keep_the_invariants(
    api: ApiClient, worker: WorkerProcess, database_url: str
) -> None:
    rng = random.Random(20261129)
    token, _ = await api.register()
    tasks = [(await create_short_task(api, token, start_in=1, every=1))["id"] for _ in range(TASKS)]
    for _ in range(EDITS):
        await asyncio.gather(*(_edit(api, token, rng.choice(tasks), rng) for _ in range(3)))
        await asyncio.sleep(rng.uniform(0, 0.3))
    await asyncio.sleep(4)  # links in flight when the edits stopped have landed

    db = await asyncpg.connect(database_url)
    try:
        now: datetime = await db.fetchval("SELECT clock_timestamp()")
        for task_id in tasks:
            task = await db.fetchrow("SELECT state FROM tasks WHERE id = $1", row_key(task_id))
            rows = await instances_of(db, task_id)
            pending = [r for r in rows if r["status"] == "PENDING"]
            assert len(pending) == (1 if task["state"] == "ACTIVE" else 0), (task["state"], rows)
            assert all(n == 1 for n in (await settle_events(db, task_id)).values())
            for row in rows:
                if row["fire_at"] is not None:
                    assert row["fire_at"] > now.astimezone(UTC) - OWED_WORK_BOUND, row
    finally:
        await db.close()
