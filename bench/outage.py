"""How fast GraphQL answers while PostgreSQL is paused, and how soon it works again (a private PostgreSQL
cluster and redis-server, a real API and worker, the project's default database timeouts).

Two pauses of PAUSE_S seconds each. In the first nobody polls /readyz: the first request learns of the
outage (it waits for the statement timeout) and every later one is refused at once. In the second a load
balancer polls /readyz every second, as in production: the first request is already refused at once.
Printed per pause: each answer's status, code and latency (first, then p50/max of the rest), /healthz's
worst latency meanwhile, and how long after the resume the first request succeeded. Then the worker's log
through a PostgreSQL restart and a Redis restart under a burst of BENCH_OUTAGE_TASKS tasks due together
every 2 s: its tracebacks and outage lines.

Then `lateness`: the same burst settled with nothing injected, then through a PostgreSQL restart that
keeps it down BENCH_OUTAGE_DOWN_S seconds, in one run: for each, the worst lateness of a settlement past
its deadline, the occurrences recorded EXCUSED (SERVICE_OUTAGE) because nothing could plan them, and
how the worker settled after the restart (instances settled in sets against one by one, from its log).

Run: .venv/bin/python -m bench.outage [pauses] [restarts] [lateness]   (BENCH_OUTAGE_PAUSE_S, default 10;
BENCH_OUTAGE_TASKS, default 300; BENCH_OUTAGE_DOWN_S, default 5)
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import statistics
import sys
import time
import urllib.error
import urllib.request
import uuid

from harness.chaos import ChaosRun, Outcome, Shape
from harness.private_services import PrivatePostgres, PrivateRedis
from harness.proofloop import ApiClient

PAUSE_S = float(os.environ.get("BENCH_OUTAGE_PAUSE_S", "10"))
DOWN_S = float(os.environ.get("BENCH_OUTAGE_DOWN_S", "5"))
TASKS = int(os.environ.get("BENCH_OUTAGE_TASKS", "300"))
IDLE = Shape(tasks=0, every=2, start_in=2, before=0, after=0, pause=0)
BURST = Shape(tasks=TASKS, every=2, start_in=5 + TASKS / 30, before=0.5, after=0, pause=0)
ME = json.dumps({"query": "{ me { id } }"}).encode()


def timed_graphql(url: str, token: str) -> tuple[float, int, str]:
    """(seconds, status, code or "ok")."""
    request = urllib.request.Request(
        f"{url}/graphql",
        data=ME,
        headers={
            "Content-Type": "application/json",
            "Accept": "application/graphql-response+json",
            "Authorization": f"Bearer {token}",
        },
    )
    started = time.monotonic()
    try:
        with urllib.request.urlopen(request, timeout=60) as response:
            status, body = int(response.status), json.loads(response.read())
    except urllib.error.HTTPError as exc:
        status, body = int(exc.code), json.loads(exc.read())
    errors = body.get("errors") or []
    code = errors[0]["extensions"]["code"] if errors else "ok"
    return time.monotonic() - started, status, code


def timed_get(url: str) -> float:
    started = time.monotonic()
    try:
        with urllib.request.urlopen(url, timeout=60) as response:
            response.read()
    except urllib.error.HTTPError:
        pass
    return time.monotonic() - started


async def poll(url: str, every: float, stop: asyncio.Event, seen: list[float]) -> None:
    while not stop.is_set():
        seen.append(await asyncio.to_thread(timed_get, url))
        await asyncio.sleep(every)


async def one_pause(run: ChaosRun, pg: PrivatePostgres, token: str, balancer: bool) -> None:
    stop = asyncio.Event()
    healthz: list[float] = []
    readyz: list[float] = []
    pollers = [asyncio.create_task(poll(f"{run.api_url}/healthz", 0.2, stop, healthz))]
    if balancer:
        pollers.append(asyncio.create_task(poll(f"{run.api_url}/readyz", 1.0, stop, readyz)))
    pg.pause()
    answers: list[tuple[float, int, str]] = []
    try:
        if balancer:
            await asyncio.sleep(1.5)  # the balancer has looked once
        deadline = time.monotonic() + PAUSE_S
        while time.monotonic() < deadline:
            answers.append(await asyncio.to_thread(timed_graphql, run.api_url, token))
            await asyncio.sleep(0.1)
    finally:
        pg.resume()
    resumed = time.monotonic()
    while True:
        _, status, _ = await asyncio.to_thread(timed_graphql, run.api_url, token)
        if status == 200:
            break
        await asyncio.sleep(0.05)
    back_after = time.monotonic() - resumed
    stop.set()
    await asyncio.gather(*pollers)
    first, rest = answers[0], answers[1:]
    codes = sorted({f"{status} {code}" for _, status, code in answers})
    latencies = [seconds for seconds, _, _ in rest]
    print(f"\n== PostgreSQL paused {PAUSE_S:.0f} s, {'with' if balancer else 'without'} /readyz polling")
    print(f"answers: {len(answers)}, all {', '.join(codes)}")
    print(f"first: {first[1]} {first[2]} in {first[0]:.3f} s")
    if latencies:
        print(
            f"the rest: p50 {statistics.median(latencies) * 1000:.1f} ms, max {max(latencies) * 1000:.1f} ms"
        )
    print(f"/healthz worst {max(healthz) * 1000:.1f} ms over {len(healthz)} polls")
    if readyz:
        print(f"/readyz worst {max(readyz):.3f} s over {len(readyz)} polls")
    print(f"first success {back_after:.2f} s after the resume")


async def restarts(pg: PrivatePostgres, redis: PrivateRedis) -> None:
    run = ChaosRun(pg, redis, f"outage_bench_{uuid.uuid4().hex[:8]}", BURST)
    run.env["PROOFLOOP_MAX_TASKS_PER_USER"] = str(TASKS)  # one user makes the whole burst
    async with run.running():
        assert run.worker is not None
        await run.start_burst()
        try:
            before = len(run.worker.log().splitlines())
            started = time.monotonic()
            await asyncio.to_thread(pg.stop)
            await asyncio.sleep(2.5)  # a restart as long as a real one (this cluster restarts in 0.3 s)
            await asyncio.to_thread(pg.start)
            pg_down = time.monotonic() - started
            await asyncio.sleep(5)
            await asyncio.to_thread(redis.restart, 3.0)
            await asyncio.sleep(5)
        finally:
            await run.stop_burst()
        lines = run.worker.log().splitlines()[before:]
    print(
        f"\n== worker log: {TASKS} tasks due every 2 s, PostgreSQL restarted ({pg_down:.1f} s), then Redis (3 s)"
    )
    print(f"lines: {len(lines)}, tracebacks: {sum(line.startswith('Traceback') for line in lines)}")
    for line in lines:
        if "proofloop.outage" in line:
            print(line[:300])


SET_LINE = re.compile(r"settled (\d+) instances as a set")


def settled_in_sets(lines: list[str]) -> tuple[int, int]:
    """(instances settled in sets, one by one) in these worker log lines."""
    in_sets = sum(int(m.group(1)) for line in lines if (m := SET_LINE.search(line)))
    alone = sum("instance settled MISSED" in line for line in lines)
    return in_sets, alone


async def lateness(pg: PrivatePostgres, redis: PrivateRedis) -> None:
    shape = Shape(
        tasks=TASKS, every=2, start_in=5 + TASKS / 30, before=0.5, after=DOWN_S + 8, pause=0, down=DOWN_S
    )
    run = ChaosRun(pg, redis, f"outage_bench_{uuid.uuid4().hex[:8]}", shape)
    run.env["PROOFLOOP_MAX_TASKS_PER_USER"] = str(TASKS)
    async with run.running():
        assert run.worker is not None
        await run.start_burst()
        rows: list[tuple[str, Outcome, tuple[int, int], float, list[str]]] = []
        try:
            for fault in ("none", "pg_restart"):
                if rows:
                    await run.into_next_burst()
                before = len(run.worker.log().splitlines())
                started = time.monotonic()
                outcome = await run.episode(fault)
                lines = run.worker.log().splitlines()[before:]
                rows.append((fault, outcome, settled_in_sets(lines), time.monotonic() - started, lines))
        finally:
            await run.stop_burst()
    print(f"\n== {TASKS} tasks due together every 2 s; PostgreSQL stopped {DOWN_S:.0f} s, then started")
    print(
        "| run | instances | worst lateness | EXCUSED | settled in sets / one by one | tracebacks | problems |"
    )
    print("|---|---|---|---|---|---|---|")
    for fault, outcome, (in_sets, alone), _, lines in rows:
        tracebacks = sum(line.startswith("Traceback") for line in lines)
        print(
            f"| {fault} | {outcome.instances} | {outcome.worst_late_s:.2f} s | {outcome.excused} |"
            f" {in_sets} / {alone} | {tracebacks} | {'; '.join(outcome.problems) or 'none'} |"
        )
    for line in rows[-1][4]:
        if "proofloop.outage" in line:
            print(line[:300])


async def pauses() -> None:
    with PrivatePostgres() as pg, PrivateRedis() as redis:
        run = ChaosRun(pg, redis, f"outage_bench_{uuid.uuid4().hex[:8]}", IDLE)
        run.production_timeouts()
        async with run.running():
            async with ApiClient(run.api_url) as api:
                token, _ = await api.register()
            await one_pause(run, pg, token, balancer=False)
            await asyncio.sleep(2)
            await one_pause(run, pg, token, balancer=True)


async def main(parts: list[str]) -> None:
    if "pauses" in parts:
        await pauses()
    if "restarts" in parts:
        with PrivatePostgres() as pg, PrivateRedis() as redis:
            await restarts(pg, redis)
    if "lateness" in parts:
        with PrivatePostgres() as pg, PrivateRedis() as redis:
            await lateness(pg, redis)
    print(f"\nload average {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1:] or ["pauses", "restarts", "lateness"]))
