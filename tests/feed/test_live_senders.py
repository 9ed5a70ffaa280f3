"""Subscriptions handed to their socket's one sender (web/live_sender.py), over a real websocket.

Many subscriptions on one graphql-transport-ws socket: each receives every event in order with its own
selection, a client's `complete` stops only its own, and closing the socket leaves nothing registered.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
import urllib.request
from collections.abc import AsyncIterator, Iterator
from typing import Any

import pytest
from websockets.asyncio.client import ClientConnection, connect
from websockets.typing import Subprotocol

from harness.proofloop import ApiClient, ServerProcess, WorkerProcess, free_port
from tests.support.live import start_missing_task, ws_url

FULL = "subscription { verificationEvents { id type taskTitle task { id } } }"
NARROWED = "subscription($taskId: ID) { verificationEvents(taskId: $taskId) { id instanceStatus } }"
RESUMED = "subscription($after: ID) { verificationEvents(after: $after) { id } }"


@pytest.fixture(scope="module")
def own_server(service_env: dict[str, str]) -> Iterator[ServerProcess]:
    """A server of this module's own: its open-subscriptions gauge counts only these tests' subscriptions."""
    with ServerProcess(service_env, port=free_port()) as proc:
        yield proc


class Socket:
    """One websocket; every `next` frame goes to its operation's queue."""

    def __init__(self, ws: ClientConnection) -> None:
        self.ws = ws
        self.frames: dict[str, asyncio.Queue[dict[str, Any]]] = {}

    async def read(self) -> None:
        with contextlib.suppress(Exception):
            async for raw in self.ws:
                message = json.loads(raw)
                self.queue(message.get("id", "")).put_nowait(message)

    def queue(self, operation_id: str) -> asyncio.Queue[dict[str, Any]]:
        return self.frames.setdefault(operation_id, asyncio.Queue())

    async def subscribe(self, operation_id: str, query: str, **variables: str) -> None:
        payload = {"query": query, "variables": variables}
        await self.ws.send(json.dumps({"id": operation_id, "type": "subscribe", "payload": payload}))

    async def complete(self, operation_id: str) -> None:
        await self.ws.send(json.dumps({"id": operation_id, "type": "complete"}))

    async def events(self, operation_id: str, count: int, within: float = 15) -> list[dict[str, Any]]:
        received = []
        for _ in range(count):
            frame = await asyncio.wait_for(self.queue(operation_id).get(), within)
            assert frame["type"] == "next", frame
            assert "errors" not in frame["payload"], frame
            received.append(frame["payload"]["data"]["verificationEvents"])
        return received

    def pending(self, operation_id: str) -> int:
        return self.queue(operation_id).qsize()


@contextlib.asynccontextmanager
async def socket(server: ServerProcess, token: str) -> AsyncIterator[Socket]:
    async with connect(ws_url(server), subprotocols=[Subprotocol("graphql-transport-ws")]) as ws:
        await ws.send(
            json.dumps({"type": "connection_init", "payload": {"Authorization": f"Bearer {token}"}})
        )
        assert json.loads(await ws.recv())["type"] == "connection_ack"
        opened = Socket(ws)
        reader = asyncio.create_task(opened.read())
        try:
            yield opened
        finally:
            reader.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await reader


async def open_subscriptions(server: ServerProcess, gauge: str = "proofloop_open_subscriptions") -> int:
    def read() -> str:
        with urllib.request.urlopen(f"{server.url}/metrics", timeout=10) as response:
            return str(response.read().decode())

    text = await asyncio.to_thread(read)
    for line in text.splitlines():
        if line.startswith(f"{gauge} "):
            return int(float(line.split()[1]))
    return 0


async def until_open(
    server: ServerProcess, count: int, within: float = 15, gauge: str = "proofloop_open_subscriptions"
) -> None:
    deadline = time.monotonic() + within
    while (seen := await open_subscriptions(server, gauge)) != count:
        assert time.monotonic() < deadline, f"{seen} subscriptions open, expected {count}"
        await asyncio.sleep(0.2)


async def test_one_socket_carries_many_subscriptions_each_with_its_own_selection(
    own_server: ServerProcess, worker: WorkerProcess
) -> None:
    server = own_server
    async with ApiClient(server.url) as client:
        token, _ = await client.register()
        before = await open_subscriptions(server)
        task_id = await start_missing_task(client, token, title="Stretch")
        async with socket(server, token) as ws:
            for n in range(4):
                await ws.subscribe(f"full-{n}", FULL)
            for n in range(3):
                await ws.subscribe(f"narrow-{n}", NARROWED, taskId=task_id)
            await until_open(server, before + 7)
            # each went on in the socket's sender, none in a task of its own
            await until_open(server, 7, gauge="proofloop_handed_off_subscriptions")
            full = [await ws.events(f"full-{n}", 3) for n in range(4)]
            narrow = [await ws.events(f"narrow-{n}", 3) for n in range(3)]
            assert all(events == full[0] for events in full)  # same events, same order, same data
            assert [e["id"] for e in narrow[0]] == [e["id"] for e in full[0]]
            assert all(events == narrow[0] for events in narrow)
            assert {(e["type"], e["taskTitle"], e["task"]["id"]) for e in full[0]} == {
                ("MISSED", "Stretch", task_id)
            }
            assert {tuple(e) for e in narrow[0]} == {("id", "instanceStatus")}  # its own selection

            for n in range(2):
                await ws.complete(f"full-{n}")
            await until_open(server, before + 5)
            still = await ws.events("full-2", 2)
            await ws.events("narrow-0", 2)
            assert [e["id"] for e in await ws.events("full-3", 2)] == [e["id"] for e in still]
            await asyncio.sleep(0.5)
            for n in range(2):  # what was queued before `complete` arrived, and nothing after
                stale = [f["payload"]["data"]["verificationEvents"]["id"] for f in _drain(ws, f"full-{n}")]
                assert not set(stale) & {e["id"] for e in still}
        await until_open(server, before)  # the socket's end removed every subscription it carried
        await until_open(server, 0, gauge="proofloop_handed_off_subscriptions")
        await client.execute("mutation($id: ID!) { deleteTask(id: $id) }", {"id": task_id}, token=token)


async def test_a_resumed_subscription_replays_then_goes_on_without_gap_or_duplicate(
    own_server: ServerProcess, worker: WorkerProcess
) -> None:
    server = own_server
    async with ApiClient(server.url) as client:
        token, _ = await client.register()
        task_id = await start_missing_task(client, token)
        async with socket(server, token) as ws:
            await ws.subscribe("live", FULL)
            first = (await ws.events("live", 1))[0]["id"]
            await ws.subscribe("resumed", RESUMED, after=first)
            live = [e["id"] for e in await ws.events("live", 4)]
            resumed = [e["id"] for e in await ws.events("resumed", 4)]
        await client.execute("mutation($id: ID!) { deleteTask(id: $id) }", {"id": task_id}, token=token)
    assert resumed == live


def _drain(ws: Socket, operation_id: str) -> list[dict[str, Any]]:
    frames = []
    while ws.pending(operation_id):
        frames.append(ws.queue(operation_id).get_nowait())
    return frames
