"""The chain heals: links lost from Redis and links held by a killed worker are resent by the pump.

Each test runs on a database and Redis database of its own, with its own API and worker processes,
so stopping or killing a worker touches nothing else.
"""

from __future__ import annotations

import asyncio
from datetime import timedelta

import asyncpg
import redis

from harness.chain_support import create_short_task, eventually, instances_of, settle_events
from harness.proofloop import ApiClient, ServerProcess, WorkerProcess, free_port

TASKS = 20
PUMP_INTERVAL = 1  # private_env's PROOFLOOP_PUMP_INTERVAL_SECONDS
OVERDUE = 2  # private_env's PROOFLOOP_LINK_OVERDUE_SECONDS
# a loaded 2-core machine takes seconds to start the new worker and drain it; what this guards against is
# Dramatiq's own recovery, which waits out a 60 s heartbeat for a killed worker and never comes for a flush
STARTUP_SLACK = 15
HEAL_BOUND = timedelta(seconds=PUMP_INTERVAL + OVERDUE + STARTUP_SLACK)


async def _chain_heals(private_env: dict[str, str], lose_links: str) -> None:
    with ServerProcess(private_env, port=free_port()) as server:
        worker = WorkerProcess(private_env)
        worker.start()
        db = await asyncpg.connect(private_env["PROOFLOOP_DATABASE_URL"])
        try:
            async with ApiClient(server.url) as api:
                token, _ = await api.register()
                tasks = [await create_short_task(api, token, start_in=4, every=30) for _ in range(TASKS)]
            await asyncio.sleep(1.5)  # the worker has fetched the delayed links into memory
            if lose_links == "flush":
                worker.stop()  # a graceful stop hands held links back to Redis...
                redis.Redis.from_url(private_env["PROOFLOOP_REDIS_URL"]).flushdb()  # ...where they are lost
            else:
                worker.kill()  # kill -9: held links come back only after a heartbeat timeout
            worker = WorkerProcess(private_env)
            worker.start()

            async def all_settled() -> bool:
                firsts = [(await instances_of(db, t["id"]))[0] for t in tasks]
                return all(r["status"] == "MISSED" for r in firsts)

            await eventually(all_settled, 30, f"every first instance settled after {lose_links}")
            for task in tasks:
                rows = await instances_of(db, task["id"])
                first = rows[0]
                assert first["settled_at"] - first["due_at"] <= HEAL_BOUND
                assert [r["status"] for r in rows].count("PENDING") == 1
                assert set((await settle_events(db, task["id"])).values()) == {1}
        finally:
            worker.stop()
            await db.close()


async def test_links_lost_from_redis_are_healed_by_the_pump(private_env: dict[str, str]) -> None:
    await _chain_heals(private_env, "flush")


async def test_links_held_by_a_killed_worker_are_healed_by_the_pump(private_env: dict[str, str]) -> None:
    await _chain_heals(private_env, "kill")
