"""Starvation: 20,000 far links, then 500 due in 10 s — are the near ones late?

Proofloop: 20,000 one-off tasks whose PENDING instance is due a day away are inserted by SQL (fire_at
outside the 300 s horizon, so they stay in the database: no message), then this process creates 500
one-off tasks due 10 s later through the real path (services.tasks.tasks.create_task_planned: the chain sends each link
after commit). Raw Dramatiq, on the same private Redis with the same worker settings (1 process x
8 threads, worker_timeout 100 ms): 20,000 no-op messages delayed 1 hour are sent first, then 500 due in
10 s; the wait is capped at ~60 s after the first of the 500 was sent, and the ones that had not run by then
are counted. Worker RSS (psutil, summed over the dramatiq worker processes) is sampled during each run.
Target: Proofloop p99 <= 1 s for the 500.

Run: .venv/bin/python -m bench.chain_starvation
"""

from __future__ import annotations

import asyncio
import math
import sys
import time
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import asyncpg

from bench.chain_support import (
    BenchEnv,
    Lateness,
    Proc,
    RawSender,
    Row,
    batch_state,
    bench_user,
    bulk_pending,
    close_orm,
    db_now,
    fmt_rss,
    ms,
    open_orm,
    print_table,
    run_main,
    say,
    wait_batch_settled,
    wait_raw_async,
)

FAR = 20_000
NEAR = 500
NEAR_DUE_S = 10.0
RAW_FAR_DELAY_S = 3600
CAP_S = 60.0  # raw: stop waiting this long after the first near message was sent
P99_TARGET_MS = 1000


@dataclass(frozen=True)
class Starvation:
    ran: int
    late: Lateness
    rss: tuple[int, int]


class RssSampler:
    """Keeps the highest RSS of a worker seen while running."""

    def __init__(self, worker: Proc) -> None:
        self.worker = worker
        self.peak = (0, 0)
        self.task: asyncio.Task[None] | None = None

    async def run(self) -> None:
        while True:
            sample = await asyncio.to_thread(self.worker.rss_bytes)
            self.peak = (max(self.peak[0], sample[0]), max(self.peak[1], sample[1]))
            await asyncio.sleep(0.5)

    def __enter__(self) -> RssSampler:
        self.task = asyncio.get_running_loop().create_task(self.run())
        return self

    def __exit__(self, *exc: object) -> None:
        if self.task is not None:
            self.task.cancel()


async def proofloop_starvation(env: BenchEnv) -> Starvation:
    from models import User, VerificationMethod
    from rules.recurrence import Schedule
    from services.chain.chain import ChainTiming
    from services.tasks.drafts import TaskDraft
    from services.tasks.tasks import create_task_planned

    db = await asyncpg.connect(env.database_url)
    owner_id = await bench_user(db)
    await bulk_pending(db, owner_id, "far", FAR, await db_now(db) + timedelta(days=1))
    say(f"Proofloop: {FAR} instances due in a day inserted")
    worker = env.proofloop_worker()
    await open_orm(env)
    try:
        with RssSampler(worker) as rss:
            owner = await User.get(id=owner_id)
            timing = ChainTiming(link_horizon_seconds=300)
            started = time.monotonic()
            for i in range(NEAR):
                draft = TaskDraft(
                    title=f"near-{i}",
                    description=None,
                    method=VerificationMethod.PHOTO,
                    schedule=Schedule(
                        starts_at=datetime.now(UTC) + timedelta(seconds=NEAR_DUE_S),
                        rrule=None,
                        timezone="UTC",
                        window_seconds=60,
                        grace_seconds=0,
                    ),
                )
                await create_task_planned(
                    owner, draft, min_interval_seconds=60, timing=timing, max_tasks=1_000_000
                )
            say(
                f"Proofloop: {NEAR} tasks due in {NEAR_DUE_S:.0f} s created in {time.monotonic() - started:.1f} s"
            )
            state = await wait_batch_settled(db, "near", started + CAP_S)
        far = await batch_state(db, "far")
        say(
            f"Proofloop: {state.settled}/{NEAR} near settled; far rows linked: {far.linked}/{far.total}"
            f" (must be 0: outside the horizon)"
        )
        return Starvation(state.settled, Lateness.of(state.late_ms), rss.peak)
    finally:
        await close_orm()
        await db.close()
        worker.stop()


async def raw_starvation(env: BenchEnv) -> Starvation:
    worker = env.raw_worker()
    sender = RawSender(env.redis_url)
    try:
        with RssSampler(worker) as rss:
            started = time.monotonic()
            await asyncio.to_thread(
                sender.send_many, [(f"far-{i}", time.time() + RAW_FAR_DELAY_S) for i in range(FAR)]
            )
            say(f"raw: {FAR} messages delayed 1 h sent in {time.monotonic() - started:.1f} s")
            started = time.monotonic()

            def send_near() -> None:
                for i in range(NEAR):
                    sender.send(f"near-{i}", time.time() + NEAR_DUE_S)

            await asyncio.to_thread(send_near)
            runs = await wait_raw_async(env, "near-", NEAR, started + CAP_S)
            say(
                f"raw: {len(runs)}/{NEAR} near ran within {time.monotonic() - started:.0f} s of the first send"
            )
        return Starvation(len(runs), Lateness.of([r.late_ms for r in runs]), rss.peak)
    finally:
        sender.close()
        worker.stop()


def late_text(s: Starvation, pick: float) -> str:
    if s.ran < NEAR:
        return f"{NEAR - s.ran}/{NEAR} not run by {CAP_S:.0f} s" + (
            "" if math.isnan(pick) else f" (ran: {ms(pick)})"
        )
    return ms(pick)


async def scenario(env: BenchEnv) -> None:
    proofloop = await proofloop_starvation(env)
    raw = await raw_starvation(env)
    print_table(
        f"chain_starvation: {FAR} far (1 day / raw 1 h), then {NEAR} due in {NEAR_DUE_S:.0f} s",
        [
            Row(
                f"starvation, {NEAR} near: ran/settled",
                f"{proofloop.ran}/{NEAR}",
                f"{raw.ran}/{NEAR} within {CAP_S:.0f} s",
                f"{NEAR}/{NEAR}",
                proofloop.ran == NEAR,
            ),
            Row(
                "starvation, near lateness p50",
                late_text(proofloop, proofloop.late.p50),
                late_text(raw, raw.late.p50),
                "-",
                None,
            ),
            Row(
                "starvation, near lateness p99",
                late_text(proofloop, proofloop.late.p99),
                late_text(raw, raw.late.p99),
                f"<= {P99_TARGET_MS} ms",
                proofloop.ran == NEAR and proofloop.late.p99 <= P99_TARGET_MS,
            ),
            Row(
                "starvation, near lateness max",
                late_text(proofloop, proofloop.late.max),
                late_text(raw, raw.late.max),
                "-",
                None,
            ),
            Row("starvation, worker RSS (peak)", fmt_rss(proofloop.rss), fmt_rss(raw.rss), "-", None),
        ],
    )


def main() -> None:
    run_main("chain_starvation", scenario, time_limit=175)


if __name__ == "__main__":
    main()
