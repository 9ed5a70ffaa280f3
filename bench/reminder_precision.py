"""Reminder precision: lateness = fired_at - remind_at of DUE_SOON reminders, one at a time and in a burst.

Idle: every ~120 ms this process creates a one-off task through the real path (services.tasks.tasks.create_task_planned)
with one reminder "at open", its window opening 1 s later (due in a minute), so the chain links the
reminder itself after commit. Burst: 500 such tasks whose windows all open at the same instant, 12 s
after the first is created. One worker (1 process x 8 threads) fires them. Worker CPU per reminder (every
process of the worker, over each phase) is robust to the machine's load, unlike lateness.

Run: .venv/bin/python -m bench.reminder_precision
"""

from __future__ import annotations

import asyncio
import sys
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import asyncpg

from bench.chain_support import (
    BenchEnv,
    Lateness,
    Row,
    bench_user,
    close_orm,
    open_orm,
    print_table,
    run_main,
    say,
)

IDLE = 200
EVERY_S = 0.12
BURST = 500
BURST_OPENS_IN_S = 12.0
WINDOW_S = 60

_STATE_SQL = """
SELECT COUNT(*) AS total, COUNT(r.fired_at) AS fired,
       COALESCE(SUM(r.link_no), 0) AS links,
       array_remove(array_agg(EXTRACT(EPOCH FROM (r.fired_at - r.remind_at)) * 1000), NULL) AS late_ms
FROM instance_reminders r JOIN task_instances i ON i.id = r.instance_id JOIN tasks t ON t.id = i.task_id
WHERE t.title LIKE $1
"""


async def _create(owner: object, title: str, opens_at: datetime) -> None:
    from models import ReminderAnchor, User, VerificationMethod
    from rules.recurrence import Schedule
    from services.chain.chain import ChainTiming
    from services.reminders.reminders import ReminderOffset
    from services.tasks.drafts import TaskDraft
    from services.tasks.tasks import create_task_planned

    assert isinstance(owner, User)
    draft = TaskDraft(
        title=title,
        description=None,
        method=VerificationMethod.PHOTO,
        schedule=Schedule(
            starts_at=opens_at + timedelta(seconds=WINDOW_S),
            rrule=None,
            timezone="UTC",
            window_seconds=WINDOW_S,
            grace_seconds=0,
        ),
        reminders=(ReminderOffset(ReminderAnchor.OPENS, 0),),
    )
    timing = ChainTiming(link_horizon_seconds=300)
    await create_task_planned(owner, draft, min_interval_seconds=60, timing=timing, max_tasks=1_000_000)


async def _wait_fired(db: asyncpg.Connection, batch: str, until: float) -> tuple[int, int, int, list[float]]:
    while True:
        row = await db.fetchrow(_STATE_SQL, f"{batch}-%")
        assert row is not None
        if row["fired"] >= row["total"] or time.monotonic() > until:
            return int(row["total"]), int(row["fired"]), int(row["links"]), list(row["late_ms"] or [])
        await asyncio.sleep(0.5)


async def scenario(env: BenchEnv) -> None:
    from models import User

    worker = env.proofloop_worker()
    db = await asyncpg.connect(env.database_url)
    await open_orm(env)
    rows: list[Row] = []
    try:
        owner = await User.get(id=await bench_user(db))
        say(f"idle: {IDLE} tasks, one every {EVERY_S * 1000:.0f} ms, each reminder 1 s later")
        cpu = worker.cpu_seconds()
        for i in range(IDLE):
            started = time.monotonic()
            await _create(owner, f"idle-{i}", datetime.now(UTC) + timedelta(seconds=1))
            await asyncio.sleep(max(0.0, EVERY_S - (time.monotonic() - started)))
        total, fired, links, late = await _wait_fired(db, "idle", time.monotonic() + 20)
        idle = Lateness.of(late)
        idle_cpu, cpu = worker.cpu_seconds() - cpu, worker.cpu_seconds()
        rows += [
            Row(f"idle, p50 ({fired}/{total} fired)", f"{idle.p50:.0f} ms", "-", "-", None),
            Row("idle, p99 / max", f"{idle.p99:.0f} / {idle.max:.0f} ms", "-", "-", None),
            Row("idle, links per reminder", f"{links / max(1, total):.2f}", "-", "-", None),
            Row("idle, worker CPU per reminder", f"{idle_cpu * 1000 / max(1, fired):.1f} ms", "-", "-", None),
        ]
        opens_at = (datetime.now(UTC) + timedelta(seconds=BURST_OPENS_IN_S)).replace(microsecond=0)
        say(f"burst: {BURST} tasks whose reminders all fire at {opens_at:%H:%M:%S}")
        created = time.monotonic()
        for i in range(BURST):
            await _create(owner, f"burst-{i}", opens_at)
        say(f"burst: created in {time.monotonic() - created:.1f} s")
        total, fired, links, late = await _wait_fired(db, "burst", time.monotonic() + BURST_OPENS_IN_S + 60)
        burst = Lateness.of(late)
        burst_cpu = worker.cpu_seconds() - cpu
        rows += [
            Row(f"burst of {BURST}, p50 ({fired}/{total} fired)", f"{burst.p50:.0f} ms", "-", "-", None),
            Row("burst, p99 / max", f"{burst.p99:.0f} / {burst.max:.0f} ms", "-", "-", None),
            Row("burst, links per reminder", f"{links / max(1, total):.2f}", "-", "-", None),
            Row(
                "burst, worker CPU per reminder", f"{burst_cpu * 1000 / max(1, fired):.1f} ms", "-", "-", None
            ),
        ]
    finally:
        await close_orm()
        await db.close()
        worker.stop()
    print_table("reminder_precision: lateness = fired_at - remind_at", rows)


def main() -> None:
    run_main("reminder_precision", scenario, time_limit=170)


if __name__ == "__main__":
    main()
