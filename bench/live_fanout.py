"""Live fan-out headroom: 10,000 subscriptions on ONE API process, the socket senders beside the task paths.

Run: .venv/bin/python -m bench.live_fanout [--connections 100] [--per-connection 100] [--producers 10]
     [--events 60 | --minutes M] [--baseline-minutes M] [--interval 0.25] [--rounds 1]
     [--configs socket,lean,extensions] [--env PROOFLOOP_SOME_CAP=100000 ...]

Everything is private to the run: a PostgreSQL database, a redis-server on a free port, a worker. The
same seeded users are measured against a fresh API process per configuration: `socket`, the defaults
(each subscription handed after its replay to its socket's one sender, start-up's objects frozen once);
`lean`, a task per subscription without Strawberry's extension hooks (PROOFLOOP_SUBSCRIPTION_PATH=lean);
`extensions`, Strawberry's own path with the heap frozen after each settled burst of subscriptions and
thawed with one full collection every PROOFLOOP_GC_THAW_SECONDS (here 120 s so that a run of a few
minutes holds thaws). `--baseline-minutes` runs the configurations after the first for that long (a
30-minute run of each would take an hour). Each connection is one viewer (an active partner of one producer) holding
`--per-connection` subscriptions; each event reaches every subscription of the viewers partnering for
its producer. The per-user subscription cap is raised to `--per-connection` (a viewer here is one
socket of that many subscriptions); `--env` passes other settings to the API. `--minutes` (or
BENCH_LIVE_MINUTES) runs the events phase for that long instead of `--events` events. Collector pauses
come from the API's own `gc.callbacks` probe (`proofloop_gc_pause_seconds`).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import math
import os
import resource
import time
import urllib.request
from collections.abc import Sequence

import psutil
from websockets.asyncio.client import ClientConnection, connect
from websockets.typing import Subprotocol

from bench.live_env import EVENT_IDS, live_env
from bench.live_latency import SUBSCRIPTION, Receipts, orm, percentile, produce, seed
from harness.proofloop import ApiClient, ServerProcess, WorkerProcess, free_port
from models import Task, TaskInstance

CONFIGS: dict[str, tuple[str, dict[str, str]]] = {
    "socket": ("socket senders (defaults)", {}),
    "lean": ("lean: a task per subscription", {"PROOFLOOP_SUBSCRIPTION_PATH": "lean"}),
    # Strawberry's per-operation machinery for each subscription's life, the heap frozen after each settled
    # burst (its default then: 500) and thawed with a full collection
    "extensions": (
        "extensions path, freeze/thaw",
        {
            "PROOFLOOP_SUBSCRIPTION_PATH": "extensions",
            "PROOFLOOP_GC_FREEZE_AFTER_SUBSCRIPTIONS": "500",
            "PROOFLOOP_GC_THAW_SECONDS": "120",
        },
    ),
}


async def subscribe_many(url: str, token: str, count: int) -> ClientConnection:
    """One websocket of one viewer carrying `count` subscriptions (ids 1..count)."""
    ws = await connect(url, subprotocols=[Subprotocol("graphql-transport-ws")], max_size=None, max_queue=None,
                         open_timeout=60)  # fmt: skip
    await ws.send(json.dumps({"type": "connection_init", "payload": {"Authorization": f"Bearer {token}"}}))
    ack = json.loads(await ws.recv())
    if ack.get("type") != "connection_ack":
        raise RuntimeError(f"not acknowledged: {ack}")
    for n in range(1, count + 1):
        await ws.send(json.dumps({"id": str(n), "type": "subscribe", "payload": {"query": SUBSCRIPTION}}))
    return ws


async def receive(ws: ClientConnection, receipts: Receipts, errors: list[str]) -> None:
    with contextlib.suppress(Exception):
        async for raw in ws:
            now = time.perf_counter()
            message = json.loads(raw)
            if message.get("type") == "next" and message["payload"].get("data"):
                receipts.record(
                    EVENT_IDS.decode(message["payload"]["data"]["verificationEvents"]["id"]) or 0, now
                )
            elif message.get("type") == "error" and len(errors) < 5:
                errors.append(str(message.get("payload")))


async def scrape(url: str) -> dict[str, float]:
    """The API's /metrics as {sample with labels: value}."""

    def read() -> dict[str, float]:
        with urllib.request.urlopen(f"{url}/metrics", timeout=30) as response:
            lines = response.read().decode().splitlines()
        return {
            line.rsplit(" ", 1)[0]: float(line.rsplit(" ", 1)[1])
            for line in lines
            if not line.startswith("#")
        }

    return await asyncio.to_thread(read)


async def open_subscriptions(url: str) -> int:
    return int((await scrape(url)).get("proofloop_open_subscriptions", 0))


def full_pauses(metrics: dict[str, float]) -> tuple[float, float]:
    """(full collections so far, of which longer than 50 ms), from the probe's histogram."""
    count = metrics.get('proofloop_gc_pause_seconds_count{generation="2"}', 0)
    within = metrics.get('proofloop_gc_pause_seconds_bucket{generation="2",le="0.05"}', 0)
    return count, count - within


def pauses_over_50_ms(metrics: dict[str, float]) -> float:
    """Collections of any generation so far that stopped the loop longer than 50 ms."""
    over = 0.0
    for generation in ("0", "1", "2"):
        count = metrics.get(f'proofloop_gc_pause_seconds_count{{generation="{generation}"}}', 0)
        over += count - metrics.get(
            f'proofloop_gc_pause_seconds_bucket{{generation="{generation}",le="0.05"}}', 0
        )
    return over


def longest_pause_ms(metrics: dict[str, float]) -> float:
    return 1000 * max(
        (v for k, v in metrics.items() if k.startswith("proofloop_gc_longest_pause_seconds")), default=0.0
    )


async def until_registered(url: str, subscriptions: int, timeout: float = 120) -> int:
    """Wait until the API's hub holds every subscription (its open-subscriptions gauge)."""
    deadline = time.monotonic() + timeout
    opened = 0
    while time.monotonic() < deadline:
        with contextlib.suppress(OSError):  # a busy event loop answers late
            opened = await open_subscriptions(url)
        if opened >= subscriptions:
            break
        await asyncio.sleep(0.5)
    return opened


async def measure(
    label: str, api_proc: ServerProcess, sources: list[tuple[Task, TaskInstance]], tokens: Sequence[str],
    args: argparse.Namespace, minutes: float | None,
) -> dict[str, float]:  # fmt: skip
    process = psutil.Process(api_proc.proc.pid if api_proc.proc else 0)
    url = api_proc.url.replace("http://", "ws://") + "/graphql"
    await asyncio.sleep(1)
    rss_before = process.memory_info().rss
    sockets: list[ClientConnection] = []
    for start in range(0, len(tokens), 10):  # paced: the next batch once the API registered this one
        batch = tokens[start : start + 10]
        sockets += await asyncio.gather(*(subscribe_many(url, t, args.per_connection) for t in batch))
        await until_registered(api_proc.url, len(sockets) * args.per_connection)
    receipts, errors = Receipts(), list[str]()
    readers = [asyncio.create_task(receive(ws, receipts, errors)) for ws in sockets]
    subscriptions = len(tokens) * args.per_connection
    opened = await until_registered(api_proc.url, subscriptions)
    await asyncio.sleep(2)  # the process settles after the subscribe burst
    rss_after = process.memory_info().rss
    subscribed = await scrape(api_proc.url)
    committed: dict[int, float] = {}
    events = args.events if minutes is None else int(minutes * 60 / args.interval)
    cpu_before = process.cpu_times()
    began = time.monotonic()
    for k in range(events):
        position, at = await produce(*sources[k % len(sources)])
        committed[position] = at
        await asyncio.sleep(args.interval)
    events_seconds = time.monotonic() - began
    expected = events * subscriptions // args.producers
    receipts.expected = expected
    with contextlib.suppress(TimeoutError):
        await asyncio.wait_for(receipts.complete.wait(), timeout=60)
    cpu_after = process.cpu_times()
    cpu_s = (cpu_after.user + cpu_after.system) - (cpu_before.user + cpu_before.system)
    latencies = [(t - committed[p]) * 1000 for p, ts in receipts.times.items() if p in committed for t in ts]
    order = {position: k for k, position in enumerate(committed)}
    worst = sorted(
        ((max(ts) - committed[p]) * 1000, order[p])
        for p, ts in receipts.times.items()
        if p in committed and ts
    )[-3:]
    print(
        f"[{label}] slowest events (last receipt, event number): "
        + ", ".join(f"{ms:.0f} ms #{k}" for ms, k in worst)
    )
    rss_end = process.memory_info().rss
    ended = await scrape(api_proc.url)
    fulls_before, long_before = full_pauses(subscribed)
    fulls, long_ones = full_pauses(ended)
    for ws in sockets:
        await ws.close()
    for reader in readers:
        reader.cancel()
    per_sub = (rss_after - rss_before) / subscriptions / 1024
    print(
        f"[{label}] subscriptions: {subscriptions} ({len(tokens)} connections x {args.per_connection}),"
        f" {opened} registered by the API"
    )
    print(f"[{label}] delivered: {len(latencies)} of {expected}" + (f"; errors: {errors}" if errors else ""))
    print(
        f"[{label}] collector: longest pause {longest_pause_ms(subscribed):.0f} ms while subscribing,"
        f" {longest_pause_ms(ended):.0f} ms over the whole run; during the {events_seconds / 60:.1f} min"
        f" of events: {fulls - fulls_before:.0f} full collections, {long_ones - long_before:.0f} over 50 ms;"
        f" collections of any generation over 50 ms: {pauses_over_50_ms(subscribed):.0f} while subscribing,"
        f" {pauses_over_50_ms(ended) - pauses_over_50_ms(subscribed):.0f} during the events"
    )
    print(
        f"[{label}] commit -> receipt: p50 {percentile(latencies, 50):.1f} ms,"
        f" p99 {percentile(latencies, 99):.1f} ms, max {max(latencies, default=math.nan):.1f} ms"
    )
    print(
        f"[{label}] API CPU during the events: {cpu_s:.1f} s, {1000 * cpu_s / max(1, len(latencies)):.3f} ms"
        f" per delivery, {100 * cpu_s / events_seconds:.0f} % of a core"
    )
    print(
        f"[{label}] API RSS {rss_before / 2**20:.0f} MiB before, {rss_after / 2**20:.0f} MiB subscribed,"
        f" {rss_end / 2**20:.0f} MiB after the events; {per_sub:.1f} KiB per subscription"
    )
    return {
        "p50": percentile(latencies, 50),
        "p99": percentile(latencies, 99),
        "kib": per_sub,
        "delivered": len(latencies) / max(1, expected),
        "longest": longest_pause_ms(ended),
        "over_50": long_ones - long_before,
        "minutes": events_seconds / 60,
        "ms_per_delivery": 1000 * cpu_s / max(1, len(latencies)),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--connections", type=int, default=100)
    parser.add_argument("--per-connection", type=int, default=100)
    parser.add_argument("--producers", type=int, default=10)
    parser.add_argument("--events", type=int, default=60)
    parser.add_argument("--interval", type=float, default=0.25, help="seconds between events")
    minutes = os.environ.get("BENCH_LIVE_MINUTES")
    parser.add_argument(
        "--minutes",
        type=float,
        default=float(minutes) if minutes else None,
        help="run the events phase this long (default: BENCH_LIVE_MINUTES, else --events events)",
    )
    parser.add_argument("--baseline-minutes", type=float, default=None, help="events phase of the others")
    parser.add_argument("--configs", default="socket,lean", help=f"of {', '.join(CONFIGS)}, in order")
    parser.add_argument("--rounds", type=int, default=1, help="each round measures each, order alternating")
    parser.add_argument("--env", action="append", default=[], help="KEY=VALUE for the API process")
    args = parser.parse_args()
    _, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    overrides = dict(item.split("=", 1) for item in args.env)
    # each viewer holds --per-connection subscriptions on its one socket: the per-user cap (30 by default)
    # is what a hostile account meets, not what this bench measures
    overrides.setdefault("PROOFLOOP_MAX_SUBSCRIPTIONS_PER_USER", str(args.per_connection))
    with live_env(overrides) as (env, _redis_port):

        async def run() -> None:
            results: dict[str, dict[str, float]] = {}
            async with orm(env["PROOFLOOP_DATABASE_URL"], env["PROOFLOOP_REDIS_URL"]):
                with ServerProcess(env, port=free_port()) as seeder:
                    sources, tokens = await seed(ApiClient(seeder.url), args.producers, args.connections)
                configs = [CONFIGS[name] for name in args.configs.split(",")]
                for round_no in range(1, args.rounds + 1):
                    # alternate the order per round: a shared machine's load drifts during a run
                    for name, extra in configs if round_no % 2 else configs[::-1]:
                        label = f"{name}, round {round_no}"
                        first = (name, extra) == configs[0]
                        minutes = (
                            args.minutes if first or args.baseline_minutes is None else args.baseline_minutes
                        )
                        with ServerProcess({**env, **extra}, port=free_port()) as api_proc:
                            try:
                                results[label] = await measure(
                                    label, api_proc, sources, tokens, args, minutes
                                )
                            except Exception:
                                log = "\n".join(api_proc.log().splitlines()[-20:])
                                print(f"[{label}] API log, last lines:\n{log}")
                                raise
            print(
                "\n| run | p50 | p99 | KiB per subscription | delivered | longest GC pause | full GCs > 50 ms"
                " | API CPU per delivery |"
            )
            for label, r in results.items():
                print(
                    f"| {label} | {r['p50']:.0f} ms | {r['p99']:.0f} ms | {r['kib']:.1f} | {r['delivered']:.0%}"
                    f" | {r['longest']:.0f} ms | {r['over_50']:.0f} in {r['minutes']:.1f} min"
                    f" | {r['ms_per_delivery']:.3f} ms |"
                )

        with WorkerProcess(env, threads=2):
            asyncio.run(run())


if __name__ == "__main__":
    main()
