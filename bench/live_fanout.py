"""Live fan-out headroom: 10,000 subscriptions on ONE API process, with gc.freeze and without it.

Run: .venv/bin/python -m bench.live_fanout [--connections 100] [--per-connection 100] [--producers 10]
     [--events 60] [--interval 0.25] [--env PROOFLOOP_SOME_CAP=100000 ...]

Everything is private to the run: a PostgreSQL database, a redis-server on a free port, a worker. The
same seeded users are measured twice, each against a fresh API process: as configured (gc.freeze after
start-up), then the baseline with PROOFLOOP_GC_FREEZE=false. Each connection is one viewer (an active
partner of one producer) holding `--per-connection` subscriptions; each event reaches every subscription
of the viewers partnering for its producer. The per-user subscription cap is raised to `--per-connection`
(a viewer here is one socket of that many subscriptions); `--env` passes other settings to the API.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import math
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


async def open_subscriptions(url: str) -> int:
    def read() -> int:
        with urllib.request.urlopen(f"{url}/metrics", timeout=5) as response:
            for line in response.read().decode().splitlines():
                if line.startswith("proofloop_open_subscriptions"):
                    return int(float(line.split()[-1]))
        return 0

    return await asyncio.to_thread(read)


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
    args: argparse.Namespace,
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
    committed: dict[int, float] = {}
    for k in range(args.events):
        position, at = await produce(*sources[k % len(sources)])
        committed[position] = at
        await asyncio.sleep(args.interval)
    expected = args.events * subscriptions // args.producers
    receipts.expected = expected
    with contextlib.suppress(TimeoutError):
        await asyncio.wait_for(receipts.complete.wait(), timeout=60)
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
        f"[{label}] commit -> receipt: p50 {percentile(latencies, 50):.1f} ms,"
        f" p99 {percentile(latencies, 99):.1f} ms, max {max(latencies, default=math.nan):.1f} ms"
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
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--connections", type=int, default=100)
    parser.add_argument("--per-connection", type=int, default=100)
    parser.add_argument("--producers", type=int, default=10)
    parser.add_argument("--events", type=int, default=60)
    parser.add_argument("--interval", type=float, default=0.25, help="seconds between events")
    parser.add_argument("--rounds", type=int, default=1, help="each round measures both, order alternating")
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
                configs = [("gc.freeze", {}), ("baseline, no gc.freeze", {"PROOFLOOP_GC_FREEZE": "false"})]
                for round_no in range(1, args.rounds + 1):
                    # alternate the order per round: a shared machine's load drifts during a run
                    for name, extra in configs if round_no % 2 else configs[::-1]:
                        label = f"{name}, round {round_no}"
                        with ServerProcess({**env, **extra}, port=free_port()) as api_proc:
                            try:
                                results[label] = await measure(label, api_proc, sources, tokens, args)
                            except Exception:
                                log = "\n".join(api_proc.log().splitlines()[-20:])
                                print(f"[{label}] API log, last lines:\n{log}")
                                raise
            print("\n| run | p50 | p99 | KiB per subscription | delivered |")
            for label, r in results.items():
                print(
                    f"| {label} | {r['p50']:.0f} ms | {r['p99']:.0f} ms | {r['kib']:.1f} | {r['delivered']:.0%} |"
                )

        with WorkerProcess(env, threads=2):
            asyncio.run(run())


if __name__ == "__main__":
    main()
