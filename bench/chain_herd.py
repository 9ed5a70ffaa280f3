"""The top-of-the-hour herd: 5,000 instances due at one instant on one worker process.

API: `proofloop serve` + `proofloop worker` (1 process x 8 threads) on a private PostgreSQL database and
Redis; 10 users create 5,000 one-off tasks THROUGH THE API (createTask mutations, 30 aliases a
document, 4 documents in flight), all due at one whole second HERD_LEAD_S (env BENCH_HERD_LEAD_S,
default 90) after the start, grace 0; the table says how many were created before that instant.
Each link is sent by the API after its createTask commits (gathered per process into batches).
Pump handover: 5,000 rows inserted by SQL due PUMP_LEAD_S ahead, beyond the worker's horizon (set to
PUMP_HORIZON_S for this run), so the pump hands them over as they enter it.
Raw Dramatiq: 5,000 no-op messages due at one instant, same Redis, same worker settings.
Lateness = settled_at - fire_at; rate = settled / (last settled_at - fire_at).
Targets: all 5,000 within 1.0 s of their due time; rate >= 4x raw Dramatiq's no-op rate.

Quota and avoid: the pump handover again with 5,000 quota goals (3 a week in Berlin, 2 in: MISSED, the
next week planned, in sets) or 5,000 avoid-a-place goals without samples (NOT_ENOUGH_SAMPLES, row by row).

Run: .venv/bin/python -m bench.chain_herd  (parts: `... chain_herd api pump quota avoid`; default api pump)
"""

from __future__ import annotations

import asyncio
import os
import sys
import time
import urllib.request
from datetime import timedelta
from pathlib import Path
from typing import Any

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import aiohttp
import asyncpg

from bench.chain_burst import Burst, raw_burst
from bench.chain_support import (
    BatchState,
    BenchEnv,
    Proc,
    Row,
    batch_state,
    bench_user,
    bulk_pending,
    db_now,
    print_table,
    run_main,
    say,
    wait_batch_settled,
    whole_second,
)
from harness.ports import free_port

COUNT = 5000
ALIASES = 30  # the API's alias cap per document
IN_FLIGHT = 4
USERS = 10
HERD_LEAD_S = int(os.environ.get("BENCH_HERD_LEAD_S", "90"))  # creating 5,000 must end before they are due
PUMP_LEAD_S = 40
PUMP_HORIZON_S = "20"
WAIT_S = 30
WITHIN_S = 1.0
RATIO_TARGET = 4.0

_CREATE = """createTask(input: {{title: "{title}", method: PHOTO, schedule: {{startsAt: "{starts}",
  timezone: "UTC", windowSeconds: 60, graceSeconds: 0}}}}) {{ id }}"""


def serve(env: BenchEnv) -> tuple[Proc, str]:
    port = free_port()
    extra = {"PROOFLOOP_MAX_TASKS_PER_USER": str(COUNT), "PROOFLOOP_AUTH_ADDRESS_ATTEMPTS": "1000"}
    proc = Proc(
        "proofloop-api",
        [sys.executable, "-m", "cli", "serve", "--port", str(port)],
        env.child_env(extra),
        env.data_dir,
    )
    env.procs.append(proc)
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(f"{url}/readyz", timeout=1):
                return proc, url
        except OSError:
            time.sleep(0.2)
    raise RuntimeError(f"the API did not start:\n{proc.log()[-2000:]}")


async def graphql(session: aiohttp.ClientSession, url: str, query: str, token: str | None = None) -> Any:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    async with session.post(f"{url}/graphql", json={"query": query}, headers=headers) as response:
        body = await response.json()
    if body.get("errors"):
        raise RuntimeError(f"GraphQL errors: {body['errors'][:2]}")
    return body["data"]


async def register(session: aiohttp.ClientSession, url: str, n: int) -> str:
    data = await graphql(
        session,
        url,
        f'mutation {{ register(email: "herd{n}@example.com", password: "correct horse battery",'
        f' displayName: "herd{n}") {{ token }} }}',
    )
    return str(data["register"]["token"])


async def create_herd(url: str, starts: str) -> float:
    """COUNT one-off tasks through the API, spread over USERS owners (a user's creates take turns);
    returns the tasks created per second."""
    async with aiohttp.ClientSession() as session:
        tokens = [await register(session, url, n) for n in range(USERS)]
        queue: asyncio.Queue[tuple[str, str]] = asyncio.Queue()
        for number, start in enumerate(range(0, COUNT, ALIASES)):
            aliases = " ".join(
                f"t{i}: " + _CREATE.format(title=f"herd-{i}", starts=starts)
                for i in range(start, min(start + ALIASES, COUNT))
            )
            queue.put_nowait((tokens[number % USERS], "mutation { " + aliases + " }"))

        async def client() -> None:
            while not queue.empty():
                token, document = queue.get_nowait()
                await graphql(session, url, document, token)

        started = time.monotonic()
        await asyncio.gather(*(client() for _ in range(IN_FLIGHT)))
        return COUNT / (time.monotonic() - started)


async def api_herd(env: BenchEnv) -> tuple[Burst, BatchState, float]:
    worker = env.proofloop_worker()
    api, url = serve(env)
    db = await asyncpg.connect(env.database_url)
    try:
        due = whole_second(await db_now(db) + timedelta(seconds=HERD_LEAD_S))
        say(f"API: creating {COUNT} one-off tasks due {due:%H:%M:%S}")
        rate = await create_herd(url, due.isoformat())
        left = (due - await db_now(db)).total_seconds()
        say(f"API: created {COUNT} at {rate:.0f} tasks/s; due in {left:.1f} s")
        state = await wait_batch_settled(db, "herd", time.monotonic() + left + WAIT_S)
        state = await batch_state(db, "herd", with_events=True)
        unpositioned = await db.fetchval("SELECT COUNT(*) FROM events WHERE position IS NULL")
        say(f"API: {state.settled}/{state.total} settled; {unpositioned} events without a position")
        return Burst(state.settled, state.late_ms, state.links_sent), state, rate
    finally:
        await db.close()
        api.stop()
        worker.stop()


async def pump_herd(env: BenchEnv, kind: str = "one-off") -> tuple[Burst, BatchState]:
    worker = env.proofloop_worker({"PROOFLOOP_LINK_HORIZON_SECONDS": PUMP_HORIZON_S})
    db = await asyncpg.connect(env.database_url)
    batch = f"far-{kind}"
    try:
        owner = await bench_user(db)
        fire_at = whole_second(await db_now(db) + timedelta(seconds=PUMP_LEAD_S))
        await bulk_pending(db, owner, batch, COUNT, fire_at, kind)
        say(f"pump: {COUNT} {kind} rows due {fire_at:%H:%M:%S}, beyond the {PUMP_HORIZON_S} s horizon")
        left = (fire_at - await db_now(db)).total_seconds()
        await wait_batch_settled(db, batch, time.monotonic() + left + WAIT_S)
        state = await batch_state(db, batch, with_events=True)
        say(f"pump ({kind}): {state.settled}/{state.total} settled")
        return Burst(state.settled, state.late_ms, state.links_sent), state
    finally:
        await db.close()
        worker.stop()


def rows(name: str, burst: Burst, state: BatchState, raw: Burst) -> list[Row]:
    ratio = burst.per_s / raw.per_s
    return [
        Row(
            f"{name}: all settled within (from fire_at)",
            f"{burst.span_s:.2f} s ({burst.n}/{COUNT})",
            f"{raw.span_s:.2f} s ({raw.n}/{COUNT})",
            f"<= {WITHIN_S:.1f} s",
            burst.n == COUNT and burst.span_s <= WITHIN_S,
        ),
        Row(
            f"{name}: settlements/s (raw: msgs/s)",
            f"{burst.per_s:.0f}/s ({ratio:.1f}x raw)",
            f"{raw.per_s:.0f}/s",
            f">= {RATIO_TARGET:.0f}x raw",
            burst.n == COUNT and ratio >= RATIO_TARGET,
        ),
        Row(
            f"{name}: lateness p50 / p99 / max",
            f"{burst.late.p50:.0f} / {burst.late.p99:.0f} / {burst.late.max:.0f} ms",
            f"{raw.late.p50:.0f} / {raw.late.p99:.0f} / {raw.late.max:.0f} ms",
            "-",
            None,
        ),
        Row(
            f"{name}: settled twice / never; links per instance",
            f"{state.twice} / {state.unsettled}; {state.links_sent / max(state.total, 1):.2f}",
            "-",
            "0 / 0",
            state.twice == 0 and state.unsettled == 0,
        ),
    ]


async def scenario(env: BenchEnv) -> None:
    parts = sys.argv[1:] or ["api", "pump"]
    table: list[Row] = []
    results: dict[str, tuple[Burst, BatchState]] = {}
    if "api" in parts:
        burst, state, created_per_s = await api_herd(env)
        results["API-created"] = (burst, state)
        say(f"API: createTask throughput {created_per_s:.0f} tasks/s")
    if "pump" in parts:
        results["pump handover"] = await pump_herd(env)
    # goals of other kinds, handed over by the pump alike: a quota goal settles in sets, an avoid-a-place
    # goal row by row (its samples decide)
    for kind in ("quota", "avoid"):
        if kind in parts:
            results[f"pump handover, {kind} goals"] = await pump_herd(env, kind)
    raw = await raw_burst(env)
    for name, (burst, state) in results.items():
        table += rows(name, burst, state, raw)
    print_table(f"chain_herd: {COUNT} due at one instant, one worker process", table)


def main() -> None:
    run_main("chain_herd", scenario, time_limit=HERD_LEAD_S + 300)


if __name__ == "__main__":
    main()
