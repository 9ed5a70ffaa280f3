"""A retrying client on a loaded machine, and how slow the readiness probe gets meanwhile.

A private PostgreSQL and redis-server, a real API and worker; BENCH_SPIN_PER_CORE spinning processes per
core (default 4: load far above the cores, as on a shared CI machine), given BENCH_WARM_S (default 10) to
raise the load; then for BENCH_SECONDS (default 30), rounds of BENCH_DOCUMENTS documents of five taskCreate
fields (default 40) sent at once by a client that waits BENCH_CLIENT_TIMEOUT_S (default 0.5) before sending
the very request again with its Idempotency-Key. Meanwhile /readyz is polled every 0.5 s.
Printed: the client's attempts by answer, whether the rows are exactly those asked for, and /readyz's
latency (p50 / p99 / max) and answers. The same run without the spinning processes comes first.

Run: .venv/bin/python -m bench.keyed_retries
"""

from __future__ import annotations

import asyncio
import os
import statistics
import time
import urllib.error
import urllib.request
import uuid

from harness.chaos import ChaosRun, Shape
from harness.cpu_load import spinning
from harness.keyed_retries import DOCUMENT_TASKS, Sent, send_documents
from harness.private_services import PrivatePostgres, PrivateRedis
from harness.proofloop import ApiClient

SPIN_PER_CORE = int(os.environ.get("BENCH_SPIN_PER_CORE", "4"))
DOCUMENTS = int(os.environ.get("BENCH_DOCUMENTS", "40"))
CLIENT_TIMEOUT_S = float(os.environ.get("BENCH_CLIENT_TIMEOUT_S", "0.5"))
SECONDS = float(os.environ.get("BENCH_SECONDS", "30"))
WARM_S = float(os.environ.get("BENCH_WARM_S", "10"))
IDLE = Shape(tasks=0, every=2, start_in=2, before=0, after=0, pause=0)


def probe(url: str) -> tuple[float, int]:
    started = time.monotonic()
    try:
        with urllib.request.urlopen(url, timeout=30) as response:
            status = int(response.status)
    except urllib.error.HTTPError as exc:
        status = int(exc.code)
    except OSError:
        status = 0
    return time.monotonic() - started, status


async def poll(url: str, stop: asyncio.Event, seen: list[tuple[float, int]]) -> None:
    while not stop.is_set():
        seen.append(await asyncio.to_thread(probe, url))
        await asyncio.sleep(0.5)


async def one_run(pg: PrivatePostgres, redis: PrivateRedis, per_core: int) -> None:
    run = ChaosRun(pg, redis, f"keys_bench_{uuid.uuid4().hex[:8]}", IDLE)
    run.env["PROOFLOOP_MAX_TASKS_PER_USER"] = "1000000"
    run.production_timeouts()
    async with run.running():
        async with ApiClient(run.api_url) as api:
            token, _ = await api.register()
        with spinning(per_core):
            await asyncio.sleep(WARM_S if per_core else 0)
            stop = asyncio.Event()
            readyz: list[tuple[float, int]] = []
            poller = asyncio.create_task(poll(f"{run.api_url}/readyz", stop, readyz))
            started = time.monotonic()
            sent = Sent()
            while time.monotonic() - started < SECONDS:
                await send_documents(
                    run.api_url, token, DOCUMENTS, client_timeout=CLIENT_TIMEOUT_S, sent=sent
                )
            load = os.getloadavg()[0]
            elapsed = time.monotonic() - started
            stop.set()
            await poller
        async with run.connection() as db:
            rows = {str(r["id"]) for r in await db.fetch("SELECT id FROM tasks")}
    report(per_core, sent, rows, readyz, elapsed, load)


def report(
    per_core: int, sent: Sent, rows: set[str], readyz: list[tuple[float, int]], elapsed: float, load: float
) -> None:
    answered = {Sent.row_key(task_id) for ids in sent.created.values() for task_id in ids}
    exact = {uuid.UUID(r) for r in rows} == {uuid.UUID(a) for a in answered}
    print(f"\n== {per_core} spinning processes per core ({os.cpu_count()} cores), load {load:.1f}")
    asked = (len(sent.created) + len(sent.other)) * DOCUMENT_TASKS
    print(f"documents of {DOCUMENT_TASKS} tasks for {elapsed:.1f} s; {sent.describe()}")
    print(f"rows: {len(rows)} for {asked} asked; exactly those answered: {exact}")
    latencies = sorted(seconds for seconds, _ in readyz)
    if latencies:
        p99 = latencies[min(len(latencies) - 1, int(len(latencies) * 0.99))]
        statuses = sorted({status for _, status in readyz})
        print(
            f"/readyz over {len(latencies)} polls: p50 {statistics.median(latencies) * 1000:.0f} ms,"
            f" p99 {p99 * 1000:.0f} ms, max {latencies[-1] * 1000:.0f} ms; answers {statuses}"
        )


async def main() -> None:
    with PrivatePostgres() as pg, PrivateRedis() as redis:
        await one_run(pg, redis, 0)
        await one_run(pg, redis, SPIN_PER_CORE)


if __name__ == "__main__":
    asyncio.run(main())
