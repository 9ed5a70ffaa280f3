"""The baseline: raw Dramatiq, a no-op async actor on a plain RedisBroker with the AsyncIO middleware.

Imported by `python -m dramatiq bench.raw_dramatiq --processes 1 --threads 8 --queues raw` (with
BENCH_RAW_REDIS_URL set and dramatiq_worker_timeout=100, see chain_support.BenchEnv.raw_worker): the actor
appends "tag eta_ms ran_ms" to a Redis list, so lateness = execution time - eta.

The chain benchmarks run this worker beside Proofloop's on the same private Redis. Run alone
(`python -m bench.raw_dramatiq`), it prints the raw idle-precision and burst figures only.
"""

from __future__ import annotations

import os
import sys
import time

import dramatiq
import redis.asyncio as aioredis
from dramatiq.brokers.redis import RedisBroker
from dramatiq.middleware import AsyncIO

if __package__ in (None, ""):  # `python bench/raw_dramatiq.py`
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from bench.chain_support import RAW_ACTOR, RAW_QUEUE, RAW_RAN_KEY, RAW_REDIS_ENV

_redis_url = os.environ.get(RAW_REDIS_ENV)
_client: aioredis.Redis | None = None

if _redis_url and __name__ != "__main__":  # inside the raw worker process
    broker = RedisBroker(url=_redis_url)  # type: ignore[no-untyped-call]
    broker.add_middleware(AsyncIO())
    dramatiq.set_broker(broker)

    @dramatiq.actor(actor_name=RAW_ACTOR, queue_name=RAW_QUEUE, max_retries=0)
    async def noop(tag: str, eta_ms: int) -> None:
        ran_ms = time.time() * 1000
        global _client
        if _client is None:
            _client = aioredis.Redis.from_url(_redis_url or "")
        await _client.rpush(RAW_RAN_KEY, f"{tag} {eta_ms} {ran_ms:.1f}")


def main() -> None:
    import asyncio

    from bench.chain_support import BenchEnv, Lateness, RawSender, Row, print_table, run_main, say, wait_raw

    async def scenario(env: BenchEnv) -> None:
        env.raw_worker()
        sender = RawSender(env.redis_url)
        try:
            for i in range(200):
                sender.send(f"idle-{i}", time.time() + 1.0)
                await asyncio.sleep(0.12)
            idle = Lateness.of([r.late_ms for r in wait_raw(env, "idle-", 200, time.monotonic() + 10)])
            say("raw idle done; sending the burst")
            due = time.time() + 10
            sender.send_many([(f"burst-{i}", due) for i in range(5000)])
            runs = wait_raw(env, "burst-", 5000, time.monotonic() + max(0, due - time.time()) + 40)
        finally:
            sender.close()
        burst = Lateness.of([r.late_ms for r in runs])
        span_s = (max(r.ran_ms for r in runs) / 1000 - due) if runs else float("nan")
        print_table(
            "raw Dramatiq alone",
            [
                Row("idle precision, 200 one at a time", "-", idle.text(), "-", None),
                Row(
                    f"burst, {len(runs)}/5000 ran",
                    "-",
                    f"all in {span_s:.2f} s, {len(runs) / span_s:.0f} msg/s, {burst.text()}",
                    "-",
                    None,
                ),
            ],
        )

    run_main("raw_dramatiq", scenario)


if __name__ == "__main__":
    main()
