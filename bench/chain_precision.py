"""Idle precision: 200 links one at a time, lateness = settled_at - fire_at.

Proofloop: every ~120 ms this process creates a one-off task due 1 s later through the real path
(services.tasks.tasks.create_task_planned in a write transaction, so the chain sends its own link after commit);
one worker (1 process x 8 threads) settles each instance MISSED at its fire_at. Raw Dramatiq: 200 no-op
messages delayed 1 s, one every ~120 ms, on the same private Redis with the same worker settings.
Targets: Proofloop p50 <= 100 ms, p99 <= 250 ms.

Run: .venv/bin/python -m bench.chain_precision
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
    RawSender,
    Row,
    batch_state,
    bench_user,
    close_orm,
    open_orm,
    print_table,
    run_main,
    say,
    wait_batch_settled,
    wait_raw_async,
)

LINKS = 200
EVERY_S = 0.12
DUE_IN_S = 1.0
P50_TARGET_MS = 100
P99_TARGET_MS = 250


def _whole_second_after(at: datetime) -> datetime:
    return at.replace(microsecond=0) + timedelta(seconds=1)


async def proofloop_precision(env: BenchEnv) -> tuple[Lateness, int]:
    from models import User, VerificationMethod
    from rules.recurrence import Schedule
    from services.chain.chain import ChainTiming
    from services.tasks.drafts import TaskDraft
    from services.tasks.tasks import create_task_planned

    worker = env.proofloop_worker()
    db = await asyncpg.connect(env.database_url)
    await open_orm(env)
    try:
        owner = await User.get(id=await bench_user(db))
        timing = ChainTiming(link_horizon_seconds=300)
        for i in range(LINKS):
            started = time.monotonic()
            draft = TaskDraft(
                title=f"idle-{i}",
                description=None,
                method=VerificationMethod.PHOTO,
                schedule=Schedule(
                    # a whole second (as createTask stores it) at least DUE_IN_S ahead: a fractional one
                    # would be cut back to its second and could fall before the task is created
                    starts_at=_whole_second_after(datetime.now(UTC) + timedelta(seconds=DUE_IN_S)),
                    rrule=None,
                    timezone="UTC",
                    window_seconds=60,
                    grace_seconds=0,
                ),
            )
            await create_task_planned(
                owner, draft, min_interval_seconds=60, timing=timing, max_tasks=1_000_000
            )
            await asyncio.sleep(max(0.0, EVERY_S - (time.monotonic() - started)))
        state = await wait_batch_settled(db, "idle", time.monotonic() + DUE_IN_S + 15)
        if state.settled < state.total:
            say(f"Proofloop: only {state.settled}/{state.total} settled")
        state = await batch_state(db, "idle")
        say(f"Proofloop: {state.settled}/{state.total} settled")
        return Lateness.of(state.late_ms), state.links_sent
    finally:
        await close_orm()
        await db.close()
        worker.stop()


async def raw_precision(env: BenchEnv) -> Lateness:
    worker = env.raw_worker()
    sender = RawSender(env.redis_url)
    try:
        for i in range(LINKS):
            started = time.monotonic()
            await asyncio.to_thread(sender.send, f"idle-{i}", time.time() + DUE_IN_S)
            await asyncio.sleep(max(0.0, EVERY_S - (time.monotonic() - started)))
        runs = await wait_raw_async(env, "idle-", LINKS, time.monotonic() + DUE_IN_S + 15)
        return Lateness.of([r.late_ms for r in runs])
    finally:
        sender.close()
        worker.stop()


async def scenario(env: BenchEnv) -> None:
    say(
        f"Proofloop: {LINKS} one-off tasks, one every {EVERY_S * 1000:.0f} ms, each due {DUE_IN_S:.0f} s later"
    )
    proofloop, links_sent = await proofloop_precision(env)
    say(
        f"raw Dramatiq: {LINKS} no-op messages, one every {EVERY_S * 1000:.0f} ms, each delayed {DUE_IN_S:.0f} s"
    )
    raw = await raw_precision(env)
    print_table(
        "chain_precision: idle precision, lateness = settled_at - fire_at (raw: ran - eta)",
        [
            Row(
                f"idle precision, p50 ({proofloop.n}/{LINKS} settled; raw {raw.n}/{LINKS} ran)",
                f"{proofloop.p50:.0f} ms",
                f"{raw.p50:.0f} ms",
                f"<= {P50_TARGET_MS} ms",
                proofloop.n == LINKS and proofloop.p50 <= P50_TARGET_MS,
            ),
            Row(
                "idle precision, p99",
                f"{proofloop.p99:.0f} ms",
                f"{raw.p99:.0f} ms",
                f"<= {P99_TARGET_MS} ms",
                proofloop.n == LINKS and proofloop.p99 <= P99_TARGET_MS,
            ),
            Row("idle precision, max", f"{proofloop.max:.0f} ms", f"{raw.max:.0f} ms", "-", None),
            Row("idle precision, links sent per instance", f"{links_sent / LINKS:.2f}", "1", "-", None),
        ],
    )


def main() -> None:
    run_main("chain_precision", scenario, time_limit=170)


if __name__ == "__main__":
    main()
