"""Commitment horizon: how late a pending task change applies after its effectiveAt.

Proofloop: tasks with an open instance an hour away each get a pending pause (as an easier edit inside the
horizon leaves it); lateness = the instance's settled_at (the pause cancels it) - pending_effective_at.
Idle: 200 changes due one every 100 ms, each 3 s after it is held (so the pump links it first). Bursts:
2,000 pauses due at the same instant, then 2,000 schedule changes (each cancels the open instance and plans
the first occurrence of a new daily rule). Raw Dramatiq: 200 no-op messages delayed 3 s, one every 100 ms, on
the same Redis with the same worker settings.

Run: .venv/bin/python -m bench.horizon_apply
"""

from __future__ import annotations

import asyncio
import json
import sys
import time
from datetime import datetime, timedelta
from pathlib import Path

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import asyncpg

from bench.chain_support import (
    BenchEnv,
    Lateness,
    RawSender,
    Row,
    bench_user,
    bulk_pending,
    db_now,
    print_table,
    run_main,
    say,
    wait_raw_async,
)

IDLE = 200
EVERY_S = 0.1
DUE_IN_S = 3.0
BURST = 2000

PAUSE = '{"pause": true}'
_HOLD_SQL = """
UPDATE tasks SET pending_change = $4::jsonb, pending_effective_at = $2
WHERE id = ANY(
    SELECT id FROM tasks WHERE title LIKE $1 || '-%' AND state = 'ACTIVE' AND pending_change IS NULL LIMIT $3
)
RETURNING id
"""
_APPLIED_SQL = """
SELECT task_id, settled_at FROM task_instances WHERE task_id = ANY($1::uuid[]) AND status = 'CANCELED'
"""


async def _hold(
    db: asyncpg.Connection, batch: str, effective_at: datetime, count: int, change: str = PAUSE
) -> list[str]:
    rows = await db.fetch(_HOLD_SQL, batch, effective_at, count, change)
    return [str(r["id"]) for r in rows]


async def _lateness(db: asyncpg.Connection, held: dict[str, datetime], until: float) -> Lateness:
    late: dict[str, float] = {}
    while time.monotonic() < until and len(late) < len(held):
        await asyncio.sleep(0.5)
        for row in await db.fetch(_APPLIED_SQL, list(held)):
            task_id = str(row["task_id"])
            late[task_id] = (row["settled_at"] - held[task_id]).total_seconds() * 1000
    return Lateness.of(list(late.values()))


async def proofloop_idle(env: BenchEnv, db: asyncpg.Connection, owner: str) -> Lateness:
    await bulk_pending(db, owner, "idle", IDLE, await db_now(db) + timedelta(hours=1))
    held: dict[str, datetime] = {}
    for _ in range(IDLE):
        started = time.monotonic()
        effective_at = await db_now(db) + timedelta(seconds=DUE_IN_S)
        for task_id in await _hold(db, "idle", effective_at, 1):
            held[task_id] = effective_at
        await asyncio.sleep(max(0.0, EVERY_S - (time.monotonic() - started)))
    return await _lateness(db, held, time.monotonic() + DUE_IN_S + 20)


async def proofloop_burst(db: asyncpg.Connection, owner: str, batch: str, change: str) -> Lateness:
    await bulk_pending(db, owner, batch, BURST, await db_now(db) + timedelta(hours=1))
    effective_at = await db_now(db) + timedelta(seconds=DUE_IN_S)
    held = dict.fromkeys(await _hold(db, batch, effective_at, BURST, change), effective_at)
    return await _lateness(db, held, time.monotonic() + DUE_IN_S + 60)


def _new_schedule(starts_at: datetime) -> str:
    """A waiting schedule change (tasks.pending_change's keys): daily from `starts_at`, in UTC."""
    return json.dumps(
        {"starts_at": starts_at.isoformat(), "rrule": "FREQ=DAILY", "timezone": "UTC", "count_ends_at": None}
    )


async def raw_idle(env: BenchEnv) -> Lateness:
    worker = env.raw_worker()
    sender = RawSender(env.redis_url)
    try:
        for i in range(IDLE):
            started = time.monotonic()
            await asyncio.to_thread(sender.send, f"horizon-{i}", time.time() + DUE_IN_S)
            await asyncio.sleep(max(0.0, EVERY_S - (time.monotonic() - started)))
        runs = await wait_raw_async(env, "horizon-", IDLE, time.monotonic() + DUE_IN_S + 15)
        return Lateness.of([r.late_ms for r in runs])
    finally:
        sender.close()
        worker.stop()


async def scenario(env: BenchEnv) -> None:
    worker = env.proofloop_worker()
    db = await asyncpg.connect(env.database_url)
    try:
        owner = await bench_user(db)
        say(
            f"Proofloop: {IDLE} pending pauses, one every {EVERY_S * 1000:.0f} ms, each due {DUE_IN_S:.0f} s later"
        )
        idle = await proofloop_idle(env, db, owner)
        say(f"Proofloop: {BURST} pending pauses due at one instant")
        burst = await proofloop_burst(db, owner, "burst", PAUSE)
        say(f"Proofloop: {BURST} pending schedule changes due at one instant")
        tomorrow = (await db_now(db) + timedelta(days=1)).replace(microsecond=0)
        replans = await proofloop_burst(db, owner, "replan", _new_schedule(tomorrow))
    finally:
        await db.close()
        worker.stop()
    say(
        f"raw Dramatiq: {IDLE} no-op messages, one every {EVERY_S * 1000:.0f} ms, each delayed {DUE_IN_S:.0f} s"
    )
    raw = await raw_idle(env)
    print_table(
        "horizon_apply: lateness = applied (instance canceled) - effectiveAt (raw: ran - eta)",
        [
            Row(f"idle, {idle.n}/{IDLE} applied: p50", f"{idle.p50:.0f} ms", f"{raw.p50:.0f} ms", "-", None),
            Row(
                "idle: p99 / max",
                f"{idle.p99:.0f} / {idle.max:.0f} ms",
                f"{raw.p99:.0f} / {raw.max:.0f} ms",
                "-",
                None,
            ),
            Row(
                f"pauses, {burst.n}/{BURST} at one instant: p50 / p99 / last",
                f"{burst.p50:.0f} / {burst.p99:.0f} / {burst.max:.0f} ms",
                "-",
                "-",
                None,
            ),
            Row(
                f"re-plans, {replans.n}/{BURST} at one instant: p50 / p99 / last",
                f"{replans.p50:.0f} / {replans.p99:.0f} / {replans.max:.0f} ms",
                "-",
                "-",
                None,
            ),
        ],
    )


def main() -> None:
    run_main("horizon_apply", scenario, time_limit=200)


if __name__ == "__main__":
    main()
