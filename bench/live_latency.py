"""Live-event fan-out: commit-to-websocket latency with many partner subscriptions on ONE API process.

Run: .venv/bin/python -m bench.live_latency [--subscribers 1000] [--producers 10] [--events 200]

Everything is private to the run: a PostgreSQL database (created on 127.0.0.1:5432, dropped after), a
redis-server on a free port, one API process and one worker. Subscribers are raw `websockets` clients
speaking graphql-transport-ws, each a partner of one of the producers. Events are written by a direct
service call in this process; commit time is taken by an after-commit hook registered before the
event's own announcement, receipt time when a client reads the `next` frame (same clock).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import math
import resource
import secrets
import time
import uuid
from collections import defaultdict
from collections.abc import AsyncIterator, Sequence
from datetime import UTC, datetime, timedelta

import psutil
import redis.asyncio as aioredis
from websockets.asyncio.client import ClientConnection, connect
from websockets.typing import Subprotocol

from bench.live_env import EVENT_IDS, api_redis_connections, live_env
from harness.proofloop import ApiClient, ServerProcess, WorkerProcess, free_port, row_key
from models import AuthToken, Event, EventType, Partnership, PartnershipStatus, Task, TaskInstance, User
from realtime.redis_client import close_redis, open_redis
from runtime import close_database, open_database
from services.accounts.accounts import token_digest
from services.feed.events import record_event
from services.kit.db import on_commit, write_transaction
from settings import Settings

SUBSCRIPTION = "subscription { verificationEvents { id type taskTitle user { id displayName } } }"
CREATE_TASK = "mutation($input: CreateTaskInput!) { createTask(input: $input) { id currentInstance { id } } }"


def percentile(values: Sequence[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[max(1, math.ceil(p / 100 * len(ordered))) - 1] if ordered else math.nan


async def seed(
    api: ApiClient, producers: int, subscribers: int
) -> tuple[list[tuple[Task, TaskInstance]], list[str]]:
    """Producers with one task each (made over HTTP), and subscriber accounts made in bulk (no argon2)."""
    sources: list[tuple[Task, TaskInstance]] = []
    starts_at = (datetime.now(UTC) + timedelta(days=1)).isoformat()
    for _ in range(producers):
        token, _ = await api.register()
        task_input = {
            "title": "Gym",
            "method": "PHOTO",
            "schedule": {"startsAt": starts_at, "rrule": "FREQ=DAILY"},
        }
        task = (await api.execute(CREATE_TASK, {"input": task_input}, token=token))["createTask"]
        sources.append(
            (
                await Task.get(id=row_key(task["id"])),
                await TaskInstance.get(id=row_key(task["currentInstance"]["id"])),
            )
        )
    users = [
        User(id=uuid.uuid4(), email=f"watcher{i}-{uuid.uuid4().hex[:6]}@example.com", display_name=f"W{i}",
             password_hash="-")
        for i in range(subscribers)
    ]  # fmt: skip
    await User.bulk_create(users, batch_size=500)
    tokens = [secrets.token_urlsafe(24) for _ in users]
    expires = datetime.now(UTC) + timedelta(days=1)
    await AuthToken.bulk_create(
        [
            AuthToken(user_id=u.id, digest=token_digest(t), expires_at=expires)
            for u, t in zip(users, tokens, strict=True)
        ],
        batch_size=500,
    )
    await Partnership.bulk_create(
        [
            Partnership(user_id=sources[i % producers][0].owner_id, partner_id=u.id, invited_email=u.email,
                        status=PartnershipStatus.ACTIVE)
            for i, u in enumerate(users)
        ],
        batch_size=500,
    )  # fmt: skip
    return sources, tokens


async def subscribe(url: str, token: str) -> ClientConnection:
    ws = await connect(url, subprotocols=[Subprotocol("graphql-transport-ws")], max_size=None)
    await ws.send(json.dumps({"type": "connection_init", "payload": {"Authorization": f"Bearer {token}"}}))
    ack = json.loads(await ws.recv())
    if ack.get("type") != "connection_ack":
        raise RuntimeError(f"not acknowledged: {ack}")
    await ws.send(json.dumps({"id": "1", "type": "subscribe", "payload": {"query": SUBSCRIPTION}}))
    return ws


class Receipts:
    """When each client read each event, and a signal once every expected delivery arrived."""

    def __init__(self) -> None:
        self.times: dict[int, list[float]] = defaultdict(list)
        self.count = 0
        self.expected = math.inf
        self.complete = asyncio.Event()

    def record(self, position: int, at: float) -> None:
        self.times[position].append(at)
        self.count += 1
        if self.count >= self.expected:
            self.complete.set()


async def receive(ws: ClientConnection, receipts: Receipts) -> None:
    with contextlib.suppress(Exception):
        async for raw in ws:
            now = time.perf_counter()
            message = json.loads(raw)
            if message.get("type") == "next" and message["payload"].get("data"):
                receipts.record(
                    EVENT_IDS.decode(message["payload"]["data"]["verificationEvents"]["id"]) or 0, now
                )


async def produce(task: Task, instance: TaskInstance) -> tuple[int, float]:
    """One event through the real outbox path; returns its position and the moment its transaction committed."""
    committed = 0.0

    async def mark_commit() -> None:
        nonlocal committed
        committed = time.perf_counter()

    async with write_transaction():
        on_commit(mark_commit)  # registered first: runs right after COMMIT, before the announcement
        event = await record_event(EventType.PROOF_SUBMITTED, task, instance, datetime.now(UTC))
    position = (await Event.get(id=event.id)).position
    assert position is not None
    return position, committed


async def redis_round_trips(redis_url: str, samples: int) -> list[float]:
    client = aioredis.Redis.from_url(redis_url)
    pubsub = client.pubsub()
    await pubsub.subscribe("bench:round-trip")
    await pubsub.get_message(timeout=1)  # the subscribe confirmation
    trips = []
    for _ in range(samples):
        started = time.perf_counter()
        await client.publish("bench:round-trip", "x")
        while await pubsub.get_message(ignore_subscribe_messages=True, timeout=1) is None:
            pass
        trips.append((time.perf_counter() - started) * 1000)
    await pubsub.aclose()
    await client.aclose()
    return trips


@contextlib.asynccontextmanager
async def orm(database_url: str, redis_url: str) -> AsyncIterator[None]:
    await open_database(Settings(database_url=database_url))
    open_redis(redis_url)
    try:
        yield
    finally:
        await close_redis()
        await close_database()


async def measure(
    api_proc: ServerProcess, env: dict[str, str], redis_port: int, args: argparse.Namespace
) -> None:
    rss = psutil.Process(api_proc.proc.pid if api_proc.proc else 0).memory_info
    async with orm(env["PROOFLOOP_DATABASE_URL"], env["PROOFLOOP_REDIS_URL"]), ApiClient(api_proc.url) as api:
        sources, tokens = await seed(api, args.producers, args.subscribers)
        rss_before = rss().rss
        url = api_proc.url.replace("http://", "ws://") + "/graphql"
        sockets: list[ClientConnection] = []
        for start in range(0, len(tokens), 100):
            sockets += await asyncio.gather(*(subscribe(url, t) for t in tokens[start : start + 100]))
        receipts = Receipts()
        readers = [asyncio.create_task(receive(ws, receipts)) for ws in sockets]
        await asyncio.sleep(2)  # every subscription registered with the hub
        rss_after = rss().rss
        committed: dict[int, float] = {}
        for k in range(args.events):
            position, at = await produce(*sources[k % len(sources)])
            committed[position] = at
            await asyncio.sleep(args.interval)
        expected = args.events * args.subscribers // args.producers
        receipts.expected = expected
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(receipts.complete.wait(), timeout=15)
        latencies = [
            (t - committed[p]) * 1000 for p, times in receipts.times.items() if p in committed for t in times
        ]
        connections, pubsubs = api_redis_connections(api_proc.proc.pid if api_proc.proc else 0, redis_port)
        trips = await redis_round_trips(env["PROOFLOOP_REDIS_URL"], 1000)
        for ws in sockets:
            await ws.close()
        for reader in readers:
            reader.cancel()
    fan_out = args.subscribers // args.producers
    print(
        f"subscriptions: {args.subscribers} on one API process ({args.producers} producers x {fan_out} partners)"
    )
    print(f"events: {args.events}, one every {args.interval * 1000:.0f} ms, {fan_out} deliveries each")
    print(f"delivered: {len(latencies)} of {expected}")
    print(
        f"commit -> websocket receipt: p50 {percentile(latencies, 50):.1f} ms, p99 {percentile(latencies, 99):.1f} ms,"
        f" max {max(latencies, default=math.nan):.1f} ms"
    )
    print(f"API RSS: {rss_before / 2**20:.1f} MiB before, {rss_after / 2**20:.1f} MiB with subscriptions;"
          f" {(rss_after - rss_before) / args.subscribers / 1024:.1f} KiB per subscription")  # fmt: skip
    print(f"Redis connections held by the API process: {connections} ({pubsubs} pub/sub)")
    print(
        f"raw redis-py pub/sub round trip: p50 {percentile(trips, 50):.3f} ms, p99 {percentile(trips, 99):.3f} ms"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--subscribers", type=int, default=1000)
    parser.add_argument("--producers", type=int, default=10)
    parser.add_argument("--events", type=int, default=200)
    parser.add_argument("--interval", type=float, default=0.05, help="seconds between events")
    args = parser.parse_args()
    _, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))  # a socket per subscriber, twice over
    with (
        live_env() as (env, redis_port),
        ServerProcess(env, port=free_port()) as api_proc,
        WorkerProcess(env, threads=2),
    ):
        asyncio.run(measure(api_proc, env, redis_port, args))


if __name__ == "__main__":
    main()
