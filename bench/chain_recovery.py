"""Recovery: links lost from Redis, and links held by a killed worker, are healed by the pump.

(a) flush: 5,000 one-off tasks with a PENDING instance due ~12 s out are inserted by SQL (link_no 0); the
    pump of worker 1 claims them and sends the links, and the worker fetches the delayed messages into
    memory. Worker 1 is stopped gracefully (held delayed messages go back to Redis), the PRIVATE Redis is
    flushed (FLUSHALL), and a fresh worker is started.
(b) kill -9: the same with a new batch, but worker 1's process group is killed while holding the links;
    then a fresh worker is started.
For each: worst lateness (settled_at - fire_at), unsettled (no settling event when the wait ends), twice (more than one
MISSED event for the instance). Target: worst <= pump interval + 5 s, none lost, none twice.
Raw Dramatiq, same Redis and worker settings: 5,000 no-op messages due ~10 s out, held by the worker, then
the same flush or kill -9 and a fresh worker; counted: how many ran by 8 s after their eta.

Run: .venv/bin/python -m bench.chain_recovery
"""

from __future__ import annotations

import asyncio
import sys
import time
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import asyncpg

from bench.chain_support import (
    RAW_QUEUE,
    BenchEnv,
    Lateness,
    Proc,
    RawSender,
    Row,
    batch_state,
    bench_user,
    bulk_pending,
    db_now,
    ms,
    print_table,
    run_main,
    say,
    wait_batch_linked,
    wait_batch_settled,
    wait_raw_async,
    whole_second,
)
from settings import Settings

COUNT = 5000
LEAD_S = 10  # Proofloop: fire_at this far out
RAW_LEAD_S = 10
# the default the bench's workers run with (they get no PROOFLOOP_ pump settings)
PUMP_INTERVAL_S: float = Settings.model_fields["pump_interval_seconds"].default
WORST_TARGET_MS = (PUMP_INTERVAL_S + 5) * 1000
PROOFLOOP_WAIT_S = 45  # give up this long after fire_at (keeps the whole run under 3 min)
RAW_WAIT_S = 8  # raw: count what ran by this long after the eta (beyond the target)


@dataclass(frozen=True)
class Healed:
    settled: int
    late: Lateness
    unsettled: int  # no settling event when the wait ended (lost, or not reached yet)
    twice: int
    links_sent: int


def wait_held(env: BenchEnv, queue: str, timeout: float = 15) -> None:
    """Until the worker has fetched every delayed message of `queue` into memory (the DQ list is empty)."""
    client = env.redis()
    deadline = time.monotonic() + timeout
    while client.llen(f"dramatiq:{queue}.DQ") > 0:
        if time.monotonic() > deadline:
            raise RuntimeError(f"the worker did not fetch the delayed {queue} messages within {timeout} s")
        time.sleep(0.1)
    time.sleep(0.5)


def lose_links(env: BenchEnv, worker: Proc, how: str, queue: str) -> None:
    client = env.redis()
    if how == "flush":
        worker.stop()  # a graceful stop gives the held delayed messages back to Redis...
        back = client.llen(f"dramatiq:{queue}.DQ")
        env.flushall()  # ...where a FLUSHALL loses them
        say(f"{queue}: worker stopped gracefully ({back} delayed messages back in Redis), then FLUSHALL")
    else:
        worker.kill()
        say(f"{queue}: worker killed (-9) while holding the delayed messages")


async def proofloop_recovery(env: BenchEnv, db: asyncpg.Connection, owner: str, how: str) -> Healed:
    batch = f"rec{how}"
    worker = env.proofloop_worker()
    try:
        fire_at = whole_second(await db_now(db) + timedelta(seconds=LEAD_S))
        await bulk_pending(db, owner, batch, COUNT, fire_at)
        await wait_batch_linked(db, batch, COUNT, timeout=LEAD_S - 4)
        await asyncio.to_thread(wait_held, env, "chain")
        say(f"Proofloop {how}: {COUNT} links sent by the pump and held by the worker")
        await asyncio.to_thread(lose_links, env, worker, how, "chain")
        worker = env.proofloop_worker()
        say(
            f"Proofloop {how}: fresh worker up {(await db_now(db) - fire_at).total_seconds():+.1f} s from fire_at"
        )
        remaining = (fire_at - await db_now(db)).total_seconds()
        await wait_batch_settled(db, batch, time.monotonic() + remaining + PROOFLOOP_WAIT_S)
        await asyncio.sleep(1)  # a late duplicate would settle (twice) now, if the chain let it
        state = await batch_state(db, batch, with_events=True)
        say(f"Proofloop {how}: {state.settled}/{COUNT} settled, {state.links_sent} links sent")
        for line in worker.log().splitlines():
            if "pump sent" in line:
                print(f"    {line}")
        return Healed(
            state.settled, Lateness.of(state.late_ms), state.unsettled, state.twice, state.links_sent
        )
    finally:
        worker.stop()


async def raw_recovery(env: BenchEnv, how: str) -> int:
    worker = env.raw_worker()
    sender = RawSender(env.redis_url)
    try:
        due = time.time() + RAW_LEAD_S
        await asyncio.to_thread(sender.send_many, [(f"{how}-{i}", due) for i in range(COUNT)])
        await asyncio.to_thread(wait_held, env, RAW_QUEUE)
        await asyncio.to_thread(lose_links, env, worker, how, RAW_QUEUE)
        worker = env.raw_worker()
        runs = await wait_raw_async(
            env, f"{how}-", COUNT, time.monotonic() + (due - time.time()) + RAW_WAIT_S
        )
        say(f"raw {how}: {len(runs)}/{COUNT} ran by eta + {RAW_WAIT_S} s")
        return len(runs)
    finally:
        sender.close()
        worker.stop()


async def scenario(env: BenchEnv) -> None:
    db = await asyncpg.connect(env.database_url)
    try:
        owner = await bench_user(db)
        results = {how: await proofloop_recovery(env, db, owner, how) for how in ("flush", "kill")}
    finally:
        await db.close()
    raw = {how: await raw_recovery(env, how) for how in ("flush", "kill")}
    rows = []
    for how, label in (("flush", "(a) stop + FLUSHALL"), ("kill", "(b) kill -9")):
        healed = results[how]
        raw_lost = COUNT - raw[how]
        rows += [
            Row(
                f"recovery {label}: worst lateness",
                ms(healed.late.max) + f" (p50 {ms(healed.late.p50)})",
                f"{raw[how]}/{COUNT} ran by eta+{RAW_WAIT_S} s",
                f"<= {ms(WORST_TARGET_MS)}",
                healed.settled == COUNT and healed.late.max <= WORST_TARGET_MS,
            ),
            Row(
                f"recovery {label}: unsettled at fire_at+{PROOFLOOP_WAIT_S} s (raw: not run)",
                f"{healed.unsettled}/{COUNT}",
                f"{raw_lost}/{COUNT}"
                + (
                    " (held by the dead worker until heartbeat timeout 60 s + maintenance)"
                    if how == "kill"
                    else ""
                ),
                "0",
                healed.unsettled == 0 and healed.settled == COUNT,
            ),
            Row(f"recovery {label}: settled twice", f"{healed.twice}/{COUNT}", "-", "0", healed.twice == 0),
            Row(
                f"recovery {label}: links sent per instance",
                f"{healed.links_sent / COUNT:.2f}",
                "-",
                "-",
                None,
            ),
        ]
    print_table(f"chain_recovery: {COUNT} held links lost, then a fresh worker", rows)


def main() -> None:
    run_main("chain_recovery", scenario, time_limit=178)


if __name__ == "__main__":
    main()
