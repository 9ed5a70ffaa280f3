"""A live tier that shards: 4 API processes, viewers spread 10/20/30/40 %, events for every user.

Run: .venv/bin/python -m bench.live_shards [--users 400] [--viewers 200] [--partners 2] [--events 1500]
     [--churners 20] [--churn-cycles 25]

Everything is private to the run: a PostgreSQL database, a redis-server on a free port, a worker. The same
seeded users and the same event sequence are measured twice, each against 4 fresh API processes: with
`live_notices=per_user` (each process SUBSCRIBEs to the channels of the users its viewers watch and reads
only their rows) and with `live_notices=all` (every process takes every notice and every row, the code
before sharding). Each viewer holds one subscription on its process and watches itself and `--partners`
other users; events are written for all `--users` users, most of whom nobody watches live. Per process it
prints viewers, watched users, notices received, event rows read (the processes' own counters over
/metrics), events delivered against expected, and Redis's CPU and commands over the event phase.

Then subscribe churn: `--churners` users (not viewers) each open and close a subscription `--churn-cycles`
times on one socket against the first process; Redis's SUBSCRIBE/UNSUBSCRIBE calls are counted, also
against one extra process with the channel linger at 0, to show what the linger saves.

Last, Redis alone at 4 and 100 pub/sub connections (bench/live_redis_fanout.py): its CPU per notice with
every connection on the pattern against each watched user's channel held once.

"N shards by user hash" is computed from the same run: a process subscribed to the shards of the users its
viewers watch would receive every event of those shards.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import hashlib
import json
import random
import resource
import secrets
import time
import urllib.request
import uuid
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

import redis
from websockets.asyncio.client import ClientConnection, connect
from websockets.typing import Subprotocol

from bench import live_redis_fanout
from bench.live_env import EVENT_IDS, live_env
from bench.live_latency import CREATE_TASK, SUBSCRIPTION, orm, produce
from harness.proofloop import ApiClient, ServerProcess, WorkerProcess, free_port, row_key
from models import AuthToken, Partnership, PartnershipStatus, Task, TaskInstance, User
from services.accounts.accounts import token_digest

SHARES = (0.1, 0.2, 0.3, 0.4)
SHARD_COUNTS = (16, 64, 256)
COUNTERS = {
    "viewers": "proofloop_live_viewers",
    "watched": "proofloop_live_watched_users",
    "notices": "proofloop_live_notices_total",
    "rows": "proofloop_live_event_rows_read_total",
    "subscribed": 'proofloop_live_channel_changes_total{command="subscribe"}',
    "unsubscribed": 'proofloop_live_channel_changes_total{command="unsubscribe"}',
}
REDIS_COMMANDS = ("publish", "subscribe", "unsubscribe", "psubscribe")


@dataclass
class ModeResult:
    mode: str
    processes: list[dict[str, float]]
    redis: dict[str, float]
    seconds: float
    churn_redis: dict[str, float]
    churn_process: dict[str, float]
    errors: list[str]
    channels: float  # per-user channels the processes held then


@dataclass
class Platform:
    users: list[str]  # user ids; the first `viewers` of them subscribe
    tokens: dict[str, str]
    sources: dict[str, tuple[Task, TaskInstance]]
    watches: dict[str, set[str]]  # per viewer or churner: themselves and whom they partner for
    viewers: list[str]
    churners: list[str]
    placement: dict[str, int] = field(default_factory=dict)  # viewer -> process index


async def seed(api: ApiClient, args: argparse.Namespace, rng: random.Random) -> Platform:
    """Users and tokens in bulk (no argon2), one task each over HTTP, ACTIVE partnerships in bulk."""
    total = args.users + args.churners
    rows = [
        User(id=uuid.uuid4(), email=f"u{i}-{uuid.uuid4().hex[:6]}@example.com", display_name=f"U{i}",
             password_hash="-")
        for i in range(total)
    ]  # fmt: skip
    await User.bulk_create(rows, batch_size=500)
    tokens = {str(u.id): secrets.token_urlsafe(24) for u in rows}
    expires = datetime.now(UTC) + timedelta(days=1)
    await AuthToken.bulk_create(
        [
            AuthToken(user_id=user_id, digest=token_digest(t), expires_at=expires)
            for user_id, t in tokens.items()
        ],
        batch_size=500,
    )
    ids = [str(u.id) for u in rows]
    users, churners = ids[: args.users], ids[args.users :]
    starts_at = (datetime.now(UTC) + timedelta(days=1)).isoformat()
    task_input = {
        "title": "Gym",
        "method": "PHOTO",
        "schedule": {"startsAt": starts_at, "rrule": "FREQ=DAILY"},
    }
    gate = asyncio.Semaphore(8)

    async def task_of(user_id: str) -> tuple[str, tuple[Task, TaskInstance]]:
        async with gate:
            made = await api.execute(CREATE_TASK, {"input": task_input}, token=tokens[user_id])
        task = made["createTask"]
        return user_id, (
            await Task.get(id=row_key(task["id"])),
            await TaskInstance.get(id=row_key(task["currentInstance"]["id"])),
        )

    sources = dict(await asyncio.gather(*(task_of(u) for u in users)))
    viewers = users[: args.viewers]
    watches: dict[str, set[str]] = {}
    partnerships = []
    for watcher in [*viewers, *churners]:
        partnered = set(rng.sample([u for u in users if u != watcher], args.partners))
        watches[watcher] = {watcher, *partnered}
        for owner in partnered:
            partnerships.append(
                Partnership(user_id=owner, partner_id=watcher, invited_email="bench@example.com",
                            status=PartnershipStatus.ACTIVE, responded_at=datetime.now(UTC) - timedelta(days=1))
            )  # fmt: skip
    await Partnership.bulk_create(partnerships, batch_size=500)
    placed = viewers[:]
    rng.shuffle(placed)
    placement: dict[str, int] = {}
    start = 0
    for index, share in enumerate(SHARES):
        end = len(placed) if index == len(SHARES) - 1 else start + round(share * len(placed))
        placement |= {v: index for v in placed[start:end]}
        start = end
    return Platform(users, tokens, sources, watches, viewers, churners, placement)


def metrics_of(server: ServerProcess) -> dict[str, float]:
    with urllib.request.urlopen(f"{server.url}/metrics", timeout=10) as response:
        lines = response.read().decode().splitlines()
    values = dict.fromkeys(COUNTERS, 0.0)
    by_name = {name: key for key, name in COUNTERS.items()}
    for line in lines:
        name, _, value = line.rpartition(" ")
        if name in by_name:
            values[by_name[name]] = float(value)
    return values


def redis_figures(port: int) -> dict[str, float]:
    client = redis.Redis(port=port)
    stats = client.info("commandstats")
    cpu = client.info("cpu")
    net = client.info("stats")
    figures = {c: float(stats.get(f"cmdstat_{c}", {}).get("calls", 0)) for c in REDIS_COMMANDS}
    figures["cpu_s"] = float(cpu["used_cpu_user"]) + float(cpu["used_cpu_sys"])
    figures["out_bytes"] = float(net["total_net_output_bytes"])
    return figures


def delta(after: dict[str, float], before: dict[str, float]) -> dict[str, float]:
    return {k: after[k] - before.get(k, 0.0) for k in after}


async def open_socket(url: str, token: str) -> ClientConnection:
    ws = await connect(
        url, subprotocols=[Subprotocol("graphql-transport-ws")], max_size=None, open_timeout=60
    )
    await ws.send(json.dumps({"type": "connection_init", "payload": {"Authorization": f"Bearer {token}"}}))
    ack = json.loads(await ws.recv())
    if ack.get("type") != "connection_ack":
        raise RuntimeError(f"not acknowledged: {ack}")
    return ws


async def count_deliveries(ws: ClientConnection, tally: Counter[int], errors: list[str]) -> None:
    with contextlib.suppress(Exception):
        async for raw in ws:
            message = json.loads(raw)
            if message.get("type") == "next" and message["payload"].get("data"):
                tally[EVENT_IDS.decode(message["payload"]["data"]["verificationEvents"]["id"]) or 0] += 1
            elif message.get("type") == "error" and len(errors) < 5:
                errors.append(str(message.get("payload")))


async def until_subscribed(server: ServerProcess, viewers: int, timeout: float = 120) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with contextlib.suppress(OSError):
            if (await asyncio.to_thread(metrics_of, server))["viewers"] >= viewers:
                return
        await asyncio.sleep(0.3)
    raise RuntimeError(f"{server.url}: fewer than {viewers} viewers subscribed")


async def produce_all(platform: Platform, sequence: Sequence[str], concurrency: int = 4) -> float:
    """Write one event for each user of `sequence`, `concurrency` at a time; the seconds it took."""
    queue = list(reversed(sequence))
    started = time.perf_counter()

    async def writer() -> None:
        while queue:
            await produce(*platform.sources[queue.pop()])

    await asyncio.gather(*(writer() for _ in range(concurrency)))
    return time.perf_counter() - started


async def churn(url: str, platform: Platform, cycles: int) -> None:
    """Each churner opens and closes one subscription `cycles` times on its socket."""

    async def one(user_id: str) -> None:
        ws = await open_socket(url, platform.tokens[user_id])
        try:
            for n in range(1, cycles + 1):
                await ws.send(
                    json.dumps({"id": str(n), "type": "subscribe", "payload": {"query": SUBSCRIPTION}})
                )
                await asyncio.sleep(0.05)  # registered before it is closed
                await ws.send(json.dumps({"id": str(n), "type": "complete"}))
                await asyncio.sleep(0.01)
        finally:
            await ws.close()

    await asyncio.gather(*(one(u) for u in platform.churners))


async def measure_mode(
    mode: str, env: dict[str, str], redis_port: int, platform: Platform, sequence: Sequence[str],
    args: argparse.Namespace,
) -> ModeResult:  # fmt: skip
    servers = [ServerProcess({**env, "PROOFLOOP_LIVE_NOTICES": mode}, port=free_port()) for _ in SHARES]
    with contextlib.ExitStack() as stack:
        for server in servers:
            stack.enter_context(server)
        try:
            return await _measure_mode(mode, servers, redis_port, platform, sequence, args)
        except Exception:
            for server in servers:
                print(
                    f"[{mode}] {server.url} log, last lines:\n" + "\n".join(server.log().splitlines()[-15:])
                )
            raise


async def _measure_mode(
    mode: str, servers: list[ServerProcess], redis_port: int, platform: Platform, sequence: Sequence[str],
    args: argparse.Namespace,
) -> ModeResult:  # fmt: skip
    sockets: list[ClientConnection] = []
    tallies = [Counter[int]() for _ in servers]
    errors: list[str] = []
    readers = []
    for index, server in enumerate(servers):
        url = server.url.replace("http://", "ws://") + "/graphql"
        mine = [v for v in platform.viewers if platform.placement[v] == index]
        for start in range(0, len(mine), 20):
            batch = await asyncio.gather(
                *(open_socket(url, platform.tokens[v]) for v in mine[start : start + 20])
            )
            for ws in batch:
                await ws.send(
                    json.dumps({"id": "1", "type": "subscribe", "payload": {"query": SUBSCRIPTION}})
                )
                readers.append(asyncio.create_task(count_deliveries(ws, tallies[index], errors)))
            sockets += batch
        await until_subscribed(server, len(mine))
    await asyncio.sleep(args.catch_up_pause)  # every process's periodic catch-up has run at least once
    before = [metrics_of(s) for s in servers]
    redis_before = redis_figures(redis_port)
    seconds = await produce_all(platform, sequence)
    expected = [
        sum(1 for owner in sequence for v in platform.viewers if platform.placement[v] == i and owner in platform.watches[v])
        for i in range(len(servers))
    ]  # fmt: skip
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and any(  # noqa: ASYNC110 - the tallies are plain counters
        sum(t.values()) < e for t, e in zip(tallies, expected, strict=True)
    ):
        await asyncio.sleep(0.2)
    await asyncio.sleep(1)  # the last notices reach every process
    after = [metrics_of(s) for s in servers]
    redis_events = delta(redis_figures(redis_port), redis_before)
    redis_before_churn = redis_figures(redis_port)
    churn_before = metrics_of(servers[0])
    await churn(servers[0].url.replace("http://", "ws://") + "/graphql", platform, args.churn_cycles)
    await asyncio.sleep(1)
    redis_churn = delta(redis_figures(redis_port), redis_before_churn)
    churned = delta(metrics_of(servers[0]), churn_before)
    for ws in sockets:
        await ws.close()
    for reader in readers:
        reader.cancel()
    per_process = [
        {**delta(a, b), "viewers": a["viewers"], "watched": a["watched"], "delivered": sum(t.values()), "expected": float(e)}
        for a, b, t, e in zip(after, before, tallies, expected, strict=True)
    ]  # fmt: skip
    channels = sum(b["subscribed"] - b["unsubscribed"] for b in before)
    return ModeResult(mode, per_process, redis_events, seconds, redis_churn, churned, errors, channels)


async def measure_churn_without_linger(env: dict[str, str], redis_port: int, platform: Platform, cycles: int) -> dict[str, float]:  # fmt: skip
    with ServerProcess({**env, "PROOFLOOP_LIVE_CHANNEL_LINGER_SECONDS": "0"}, port=free_port()) as server:
        before = redis_figures(redis_port)
        await churn(server.url.replace("http://", "ws://") + "/graphql", platform, cycles)
        await asyncio.sleep(1)
        return delta(redis_figures(redis_port), before)


def shard_of(user_id: str, shards: int) -> int:
    return int.from_bytes(hashlib.blake2b(user_id.encode(), digest_size=8).digest(), "big") % shards


def shard_estimate(platform: Platform, sequence: Sequence[str], shards: int) -> list[int]:
    """Notices per process if processes subscribed to the shards of the users their viewers watch."""
    counts = []
    for index in range(len(SHARES)):
        watched = {u for v in platform.viewers if platform.placement[v] == index for u in platform.watches[v]}
        covered = {shard_of(u, shards) for u in watched}
        counts.append(sum(1 for owner in sequence if shard_of(owner, shards) in covered))
    return counts


def report(
    results: list[ModeResult], without_linger: dict[str, float], platform: Platform, sequence: Sequence[str]
) -> None:
    print(f"\n{len(platform.users)} users, {len(platform.viewers)} viewers, {len(sequence)} events\n")
    print(
        "| live_notices | process | viewers | watched users | notices received | event rows read | delivered / expected |"
    )
    print("|---|---|---|---|---|---|---|")
    for result in results:
        for index, p in enumerate(result.processes):
            print(
                f"| {result.mode} | {index + 1} ({SHARES[index]:.0%}) | {p['viewers']:.0f} | {p['watched']:.0f} |"
                f" {p['notices']:.0f} | {p['rows']:.0f} | {p['delivered']:.0f} / {p['expected']:.0f} |"
            )
    print(
        "\n| live_notices | events written in | Redis CPU (event phase) | Redis bytes out | PUBLISH calls |"
        " channels held |"
    )
    print("|---|---|---|---|---|---|")
    for result in results:
        r = result.redis
        print(
            f"| {result.mode} | {result.seconds:.1f} s | {r['cpu_s'] * 1000:.0f} ms |"
            f" {r['out_bytes'] / 1024:.0f} KiB | {r['publish']:.0f} | {result.channels:.0f} |"
        )
    print(
        "\n| churn against process 1 | SUBSCRIBE calls | UNSUBSCRIBE calls | channels subscribed / unsubscribed |"
    )
    print("|---|---|---|---|")
    for result in results:
        r, p = result.churn_redis, result.churn_process
        print(
            f"| live_notices={result.mode} | {r['subscribe']:.0f} | {r['unsubscribe']:.0f} |"
            f" {p['subscribed']:.0f} / {p['unsubscribed']:.0f} |"
        )
    print(
        f"| live_notices=per_user, channel linger 0 | {without_linger['subscribe']:.0f} |"
        f" {without_linger['unsubscribe']:.0f} | - |"
    )
    print("\nN shards by user hash (computed from this run's watched users and events): notices per process")
    for shards in SHARD_COUNTS:
        print(f"  {shards} shards: " + ", ".join(str(n) for n in shard_estimate(platform, sequence, shards)))
    for result in results:
        if result.errors:
            print(f"[{result.mode}] errors: {result.errors}")


def redis_at_scale(port: int, args: argparse.Namespace) -> None:
    """Redis alone with many API processes' pub/sub connections (bench/live_redis_fanout.py)."""
    print(
        f"\nRedis alone: {args.redis_users:,} users, {args.redis_watched:.0%} of them watched (per_user: each"
        f" held by one connection), {args.redis_notices:,} PUBLISHes to random users"
    )
    print("| pub/sub connections (API processes) | live_notices | Redis CPU | per notice | bytes delivered |"
          " Redis memory for the subscriptions |")  # fmt: skip
    print("|---|---|---|---|---|---|")
    for processes in (4, 100):
        for mode in ("per_user", "all"):
            r = live_redis_fanout.measure(
                port, processes=processes, users=args.redis_users, watched_share=args.redis_watched,
                notices=args.redis_notices, mode=mode,
            )  # fmt: skip
            print(
                f"| {processes} | {mode} | {r.cpu_ms:.0f} ms | {r.cpu_ms * 1000 / r.notices:.1f} µs |"
                f" {r.delivered_bytes / 2**20:.1f} MiB | {r.memory_kib / 1024:.1f} MiB |"
            )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--users", type=int, default=400)
    parser.add_argument("--viewers", type=int, default=200)
    parser.add_argument("--partners", type=int, default=2, help="users each viewer partners for")
    parser.add_argument("--events", type=int, default=1500)
    parser.add_argument("--churners", type=int, default=20)
    parser.add_argument("--churn-cycles", type=int, default=25)
    parser.add_argument("--catch-up-pause", type=float, default=3.0)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--redis-users", type=int, default=100_000)
    parser.add_argument("--redis-watched", type=float, default=0.3)
    parser.add_argument("--redis-notices", type=int, default=50_000)
    args = parser.parse_args()
    _, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    rng = random.Random(args.seed)
    with live_env() as (env, redis_port):

        async def run() -> None:
            async with orm(env["PROOFLOOP_DATABASE_URL"], env["PROOFLOOP_REDIS_URL"]):
                with ServerProcess(env, port=free_port()) as seeder:
                    platform = await seed(ApiClient(seeder.url), args, rng)
                sequence = [rng.choice(platform.users) for _ in range(args.events)]
                results = [
                    await measure_mode(mode, env, redis_port, platform, sequence, args)
                    for mode in ("per_user", "all")
                ]
                without_linger = await measure_churn_without_linger(
                    env, redis_port, platform, args.churn_cycles
                )
            report(results, without_linger, platform, sequence)
            redis_at_scale(redis_port, args)

        with WorkerProcess(env, threads=1):
            asyncio.run(run())


if __name__ == "__main__":
    main()
