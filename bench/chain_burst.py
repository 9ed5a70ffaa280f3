"""Burst: 5,000 instances with one fire_at on one worker process.

Proofloop: 5,000 one-off tasks and their PENDING instance are inserted by SQL with fire_at = now + ~20 s,
link_no 0 and link_for NULL, so the pump (inside the horizon, within the 5,000-link budget) claims them and
sends the links; the worker (1 process x 8 threads) settles them MISSED. Measured: time from fire_at until
all settled, lateness p50/p99, settlements/s (= settled / (last settled_at - fire_at)).
Raw Dramatiq: 5,000 no-op messages due at one instant, same Redis, same worker settings.
Targets: settlements/s >= 0.5 x raw msgs/s; all settled within 5 s of fire_at.

Run: .venv/bin/python -m bench.chain_burst
"""

from __future__ import annotations

import sys
import time
from datetime import timedelta
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
    wait_batch_linked,
    wait_batch_settled,
    wait_raw_async,
    whole_second,
)

COUNT = 5000
LEAD_S = 20  # Proofloop: fire_at this far out (the pump's tick + sending 5,000 links fit well inside)
RAW_LEAD_S = 12  # raw: due this far after the first send (sending 5,000 takes a few seconds)
WAIT_S = 60  # give up this long after fire_at
ALL_WITHIN_S = 5.0
RATIO_TARGET = 0.5


class Burst:
    def __init__(self, n: int, late_ms: list[float], links_sent: int = 0) -> None:
        self.n = n
        self.links_sent = links_sent
        self.late = Lateness.of(late_ms)
        self.span_s = self.late.max / 1000 if late_ms else float("nan")
        self.per_s = n / self.span_s if late_ms and self.span_s > 0 else float("nan")


async def proofloop_burst(env: BenchEnv) -> Burst:
    worker = env.proofloop_worker()
    db = await asyncpg.connect(env.database_url)
    try:
        owner = await bench_user(db)
        fire_at = whole_second(await db_now(db) + timedelta(seconds=LEAD_S))
        await bulk_pending(db, owner, "burst", COUNT, fire_at)
        say(f"Proofloop: {COUNT} PENDING rows inserted, fire_at {fire_at:%H:%M:%S}")
        started = time.monotonic()
        await wait_batch_linked(db, "burst", COUNT, timeout=LEAD_S - 2)
        say(f"Proofloop: the pump linked all {COUNT} in {time.monotonic() - started:.1f} s")
        remaining = (fire_at - await db_now(db)).total_seconds()
        state = await wait_batch_settled(db, "burst", time.monotonic() + remaining + WAIT_S)
        say(f"Proofloop: {state.settled}/{state.total} settled")
        resends = [line for line in worker.log().splitlines() if "pump sent" in line]
        say(f"Proofloop: {state.links_sent} links sent for {state.total} instances; pump ticks that sent:")
        for line in resends:
            print(f"    {line}")
        return Burst(state.settled, state.late_ms, state.links_sent)
    finally:
        await db.close()
        worker.stop()


async def raw_burst(env: BenchEnv) -> Burst:
    worker = env.raw_worker()
    sender = RawSender(env.redis_url)
    try:
        due = time.time() + RAW_LEAD_S
        started = time.monotonic()
        sender.send_many([(f"burst-{i}", due) for i in range(COUNT)])
        say(
            f"raw: {COUNT} messages sent in {time.monotonic() - started:.1f} s, due {due - time.time():.1f} s from now"
        )
        runs = await wait_raw_async(env, "burst-", COUNT, time.monotonic() + (due - time.time()) + WAIT_S)
        say(f"raw: {len(runs)}/{COUNT} ran")
        return Burst(len(runs), [r.late_ms for r in runs])
    finally:
        sender.close()
        worker.stop()


async def scenario(env: BenchEnv) -> None:
    proofloop = await proofloop_burst(env)
    raw = await raw_burst(env)
    ratio = proofloop.per_s / raw.per_s
    print_table(
        f"chain_burst: {COUNT} due at one instant, one worker process",
        [
            Row(
                "burst, time until all settled/ran (from fire_at)",
                f"{proofloop.span_s:.2f} s ({proofloop.n}/{COUNT})",
                f"{raw.span_s:.2f} s ({raw.n}/{COUNT})",
                f"<= {ALL_WITHIN_S:.0f} s",
                proofloop.n == COUNT and proofloop.span_s <= ALL_WITHIN_S,
            ),
            Row(
                "burst, settlements/s (raw: msgs/s)",
                f"{proofloop.per_s:.0f}/s ({ratio:.2f}x raw)",
                f"{raw.per_s:.0f}/s",
                f">= {RATIO_TARGET}x raw",
                proofloop.n == COUNT and ratio >= RATIO_TARGET,
            ),
            Row(
                "burst, links sent per instance (chain + pump)",
                f"{proofloop.links_sent / COUNT:.2f}",
                "1 (one message each)",
                "-",
                None,
            ),
            Row("burst, lateness p50", f"{proofloop.late.p50:.0f} ms", f"{raw.late.p50:.0f} ms", "-", None),
            Row("burst, lateness p99", f"{proofloop.late.p99:.0f} ms", f"{raw.late.p99:.0f} ms", "-", None),
        ],
    )


def main() -> None:
    run_main("chain_burst", scenario, time_limit=175)


if __name__ == "__main__":
    main()
