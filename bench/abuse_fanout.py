"""The fan-out attack of `bench.abuse`, on the default settings, with the slowest `/healthz` answer of each
phase: sockets opening, 20 x 100 subscribe frames arriving at once, 20 rejected check-ins pushed to the
accepted subscriptions, sockets closing. `--no-subscriptions` runs the check-ins alone: the machine's own
noise floor for the same requests.

`python -m bench.abuse_fanout [--no-subscriptions]` (about 30 s) on a private PostgreSQL database and
redis-server.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import sys
import tempfile
import time
import uuid

import httpx
import websockets
from websockets.asyncio.client import ClientConnection

from bench.abuse import CREATE, attempt, gps_task
from bench.live_env import private_redis
from harness.proofloop import ApiClient, ServerProcess, free_port, migrated_database

SUBSCRIBE = "subscription { verificationEvents { id type verification { status } } }"
CHECK_IN = """mutation($i: ID!) {
  checkIn(instanceId: $i, location: {latitude: 0, longitude: 0}, accuracyMeters: 10) { status }
}"""


class Phases:
    """/healthz answer times, each filed under the phase that was running when it was asked."""

    def __init__(self) -> None:
        self.current = "idle"
        self.answers: dict[str, list[float]] = {}

    async def poll(self, url: str, stop: asyncio.Event) -> None:
        async with httpx.AsyncClient(base_url=url, timeout=60) as client:
            while not stop.is_set():
                phase, started = self.current, time.monotonic()
                await client.get("/healthz")
                self.answers.setdefault(phase, []).append(time.monotonic() - started)
                await asyncio.sleep(0.02)


async def open_sockets(url: str, token: str) -> list[ClientConnection]:
    accepted = []
    for _ in range(20):
        socket = await websockets.connect(url, subprotocols=[websockets.Subprotocol("graphql-transport-ws")])
        init = {"type": "connection_init", "payload": {"Authorization": f"Bearer {token}"}}
        await socket.send(json.dumps(init))
        with contextlib.suppress(websockets.ConnectionClosed):
            if json.loads(await asyncio.wait_for(socket.recv(), 10))["type"] == "connection_ack":
                accepted.append(socket)
                continue
        await socket.close()
    return accepted


async def attack(server: ServerProcess, subscriptions: bool) -> None:
    api = ApiClient(server.url)
    token, _ = await api.register(f"attacker-{uuid.uuid4().hex[:8]}")
    instance_id = (await api.execute(CREATE, {"input": gps_task("fan-out")}, token=token))["createTask"][
        "currentInstance"
    ]["id"]
    phases, stop = Phases(), asyncio.Event()
    poller = asyncio.create_task(phases.poll(server.url, stop))
    await asyncio.sleep(1)
    phases.current = "sockets"
    sockets = (
        await open_sockets(server.url.replace("http://", "ws://") + "/graphql", token)
        if subscriptions
        else []
    )
    phases.current = "subscribe"
    pushes = 0

    async def drain(socket: ClientConnection) -> None:
        nonlocal pushes
        with contextlib.suppress(websockets.ConnectionClosed):
            async for raw in socket:
                message = json.loads(raw)
                if message["type"] == "next" and message["payload"].get("data"):
                    pushes += 1

    for index, socket in enumerate(sockets):
        for n in range(100):
            frame = {"id": f"{index}-{n}", "type": "subscribe", "payload": {"query": SUBSCRIBE}}
            await socket.send(json.dumps(frame))
    readers = [asyncio.create_task(drain(socket)) for socket in sockets]
    await asyncio.sleep(2)
    phases.current = "check-ins"
    codes = [await attempt(api, CHECK_IN, {"i": instance_id}, token) for _ in range(20)]
    await asyncio.sleep(3)
    phases.current = "closing"
    for reader in readers:
        reader.cancel()
    for socket in sockets:
        await socket.close()
    await asyncio.sleep(2)
    stop.set()
    await poller
    print(f"{len(sockets)} sockets accepted, {codes.count('OK')} check-ins answered, {pushes} pushes")
    for phase in ("sockets", "subscribe", "check-ins", "closing"):
        answers = phases.answers.get(phase)
        if answers:
            print(f"  {phase:10} /healthz max {max(answers) * 1000:5.0f} ms over {len(answers)} answers")


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.abuse_fanout")
    parser.add_argument("--no-subscriptions", action="store_true", help="the check-ins alone")
    args = parser.parse_args(argv)
    with migrated_database("proofloop_abuse_fanout") as database_url, private_redis() as redis_port:
        env = {
            "PROOFLOOP_DATABASE_URL": database_url,
            "PROOFLOOP_REDIS_URL": f"redis://127.0.0.1:{redis_port}/0",
            "PROOFLOOP_DATA_DIR": tempfile.mkdtemp(prefix="proofloop-abuse-fanout-"),
            "PROOFLOOP_SECRET_KEY": "bench",
        }
        with ServerProcess(env, port=free_port()) as server:
            asyncio.run(attack(server, subscriptions=not args.no_subscriptions))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
