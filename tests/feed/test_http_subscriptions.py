"""Subscriptions over HTTP, for partners behind proxies that break websockets: GraphQL over SSE (driven by the
npm graphql-sse client) and Apollo's multipart subscriptions (read by their documented wire format: parts
separated by `--graphql`, `{}` heartbeats, `{"payload": ...}` results). Same auth, same `after` resume,
same revocation as the websocket feeds.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import shutil
from collections.abc import AsyncIterator, Iterator
from typing import Any

import httpx
import pytest

from harness.mailbox import Mailbox
from harness.proofloop import ROOT, ApiClient, ServerProcess, WorkerProcess, free_port, local_http
from tests.support.live import make_partners, start_missing_task, wait_for_history

CLIENTS = ROOT / "tests" / "clients"
SUBSCRIBE = """subscription($userId: ID, $after: ID) {
  verificationEvents(userId: $userId, after: $after) { id type taskTitle }
}"""
MULTIPART_ACCEPT = "multipart/mixed;subscriptionSpec=1.0,application/json"
BOUNDARY = b"\r\n--graphql"
HEARTBEAT_SECONDS = 0.5

needs_node = pytest.mark.skipif(
    shutil.which("node") is None or not (CLIENTS / "node_modules" / "graphql-sse").exists(),
    reason="needs Node.js and `npm ci` in tests/clients (make test runs it)",
)


@pytest.fixture(scope="module")
def streams_api(service_env: dict[str, str]) -> Iterator[ServerProcess]:
    env = {**service_env, "PROOFLOOP_STREAM_HEARTBEAT_SECONDS": str(HEARTBEAT_SECONDS)}
    with ServerProcess(env, port=free_port()) as proc:
        yield proc


class Stream:
    """Results of one HTTP subscription, drained by a background task into a queue."""

    def __init__(self) -> None:
        self.items: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
        self.heartbeats = 0

    async def next(self, within: float = 10) -> dict[str, Any]:
        return await asyncio.wait_for(self.items.get(), within)

    async def events(self, count: int, within: float = 15) -> list[dict[str, Any]]:
        results = [await self.next(within) for _ in range(count)]
        assert all("errors" not in r for r in results), results
        return [r["data"]["verificationEvents"] for r in results]


@contextlib.asynccontextmanager
async def sse_stream(server: ServerProcess, token: str | None, **variables: str) -> AsyncIterator[Stream]:
    """graphql-sse's own client, in a node process printing one JSON line per result."""
    process = await asyncio.create_subprocess_exec(
        "node",
        "sse_subscribe.mjs",
        f"{server.url}/graphql",
        token or "",
        SUBSCRIBE,
        json.dumps(variables),
        cwd=CLIENTS,
        stdout=asyncio.subprocess.PIPE,
    )
    stream = Stream()

    async def read() -> None:
        assert process.stdout is not None
        async for line in process.stdout:
            message = json.loads(line)
            await stream.items.put(message.get("next", message))

    reader = asyncio.create_task(read())
    try:
        yield stream
    finally:
        if process.returncode is None:
            process.terminate()
        await process.wait()
        reader.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await reader


def multipart_parts(buffer: bytearray) -> Iterator[dict[str, Any] | None]:
    """Complete parts in the buffer (consumed): their JSON bodies, None for the closing delimiter."""
    while (end := buffer.find(BOUNDARY)) >= 0:
        part = bytes(buffer[:end])
        del buffer[: end + len(BOUNDARY)]
        if b"\r\n\r\n" in part:
            yield json.loads(part.split(b"\r\n\r\n", 1)[1])
    if buffer.startswith(b"--"):
        yield None


@contextlib.asynccontextmanager
async def multipart_stream(
    server: ServerProcess, token: str | None, **variables: str
) -> AsyncIterator[Stream]:
    stream = Stream()
    headers = {"accept": MULTIPART_ACCEPT, **({"authorization": f"Bearer {token}"} if token else {})}

    async def read() -> None:
        async with (
            local_http(timeout=None) as http,
            http.stream(
                "POST",
                f"{server.url}/graphql",
                json={"query": SUBSCRIBE, "variables": variables},
                headers=headers,
            ) as response,
        ):
            # the protocol's own type, never the client's whole Accept list
            assert response.headers["content-type"] == "multipart/mixed;boundary=graphql;subscriptionSpec=1.0"
            buffer = bytearray()
            async for chunk in response.aiter_bytes():
                buffer += chunk
                for part in multipart_parts(buffer):
                    if part is None:
                        await stream.items.put({"complete": True})
                        return
                    if part == {}:
                        stream.heartbeats += 1
                    else:
                        await stream.items.put(part["payload"])

    reader = asyncio.create_task(read())
    try:
        yield stream
    finally:
        reader.cancel()
        with contextlib.suppress(asyncio.CancelledError, httpx.HTTPError):
            await reader


async def history_after(api: ApiClient, token: str, after: str) -> list[str]:
    data = await api.execute(
        "query($a: ID) { events(after: $a, first: 100) { id } }", {"a": after}, token=token
    )
    return [e["id"] for e in data["events"]]


@needs_node
async def test_sse_delivers_resumes_without_gap_and_stops_on_logout(
    streams_api: ServerProcess, worker: WorkerProcess, mailbox: Mailbox
) -> None:
    async with ApiClient(streams_api.url, mailbox) as api:
        owner_token, _ = await api.register()
        partner_token, partner = await api.register()
        await make_partners(api, owner_token, partner_token, partner["email"])
        task_id = await start_missing_task(api, owner_token, title="SSE run")
        async with sse_stream(streams_api, partner_token, after="0") as feed:
            first = (await feed.events(1))[0]
        assert (first["type"], first["taskTitle"]) == ("MISSED", "SSE run")
        missed = await wait_for_history(api, partner_token, count=2, after=first["id"])
        async with sse_stream(streams_api, partner_token, after=first["id"]) as feed:
            resumed = [e["id"] for e in await feed.events(3)]
            await api.execute("mutation { logout }", token=partner_token)
            ended = await feed.next()
            while "errors" not in ended:  # events already on their way before the logout
                ended = await feed.next()
            assert ended["errors"][0]["extensions"]["code"] == "UNAUTHENTICATED"
            assert await feed.next() == {"complete": True}
        await api.execute("mutation($id: ID!) { deleteTask(id: $id) }", {"id": task_id}, token=owner_token)
        since_first = await history_after(api, owner_token, first["id"])
    assert resumed[:2] == missed[:2]  # replayed, no gap
    assert since_first[:3] == resumed  # then live, nothing twice


@needs_node
async def test_sse_needs_a_valid_token(streams_api: ServerProcess) -> None:
    async with sse_stream(streams_api, "not-a-token") as feed:
        result = await feed.next()
    assert result["errors"][0]["extensions"]["code"] == "UNAUTHENTICATED"


async def test_sse_sends_heartbeats(streams_api: ServerProcess) -> None:
    async with ApiClient(streams_api.url) as own:
        token, _ = await own.register()
    async with (
        local_http(timeout=10) as http,
        http.stream(
            "POST",
            f"{streams_api.url}/graphql",
            json={"query": SUBSCRIBE},
            headers={"accept": "text/event-stream", "authorization": f"Bearer {token}"},
        ) as response,
    ):
        assert response.headers["content-type"].startswith("text/event-stream")
        seen = b""
        async for chunk in response.aiter_bytes():
            seen += chunk
            if seen.count(b": ping") >= 2:
                break
    assert b"event: next" not in seen  # nothing happened: only heartbeats kept the stream open


async def test_multipart_delivers_resumes_and_stops_when_the_partnership_ends(
    streams_api: ServerProcess, worker: WorkerProcess, mailbox: Mailbox
) -> None:
    async with ApiClient(streams_api.url, mailbox) as api:
        owner_token, owner = await api.register()
        partner_token, partner = await api.register()
        partnership_id = await make_partners(api, owner_token, partner_token, partner["email"])
        task_id = await start_missing_task(api, owner_token, title="Multipart run")
        async with multipart_stream(streams_api, partner_token, after="0") as feed:
            first = (await feed.events(1))[0]
        missed = await wait_for_history(api, partner_token, count=2, after=first["id"])
        async with multipart_stream(
            streams_api, partner_token, userId=owner["id"], after=first["id"]
        ) as feed:
            resumed = [e["id"] for e in await feed.events(2)]
            await api.execute(
                "mutation($id: ID!) { removePartner(partnershipId: $id) }",
                {"id": partnership_id},
                token=owner_token,
            )
            ended = await feed.next()
            while "errors" not in ended:
                ended = await feed.next()
            assert ended["errors"][0]["extensions"]["code"] == "NOT_FOUND"
            assert await feed.next() == {"complete": True}
            assert feed.heartbeats >= 1  # the protocol's first part is a heartbeat
        await api.execute("mutation($id: ID!) { deleteTask(id: $id) }", {"id": task_id}, token=owner_token)
    assert resumed == missed[:2]
    assert first["type"] == "MISSED"


async def test_multipart_needs_a_valid_token(streams_api: ServerProcess) -> None:
    async with multipart_stream(streams_api, None) as feed:
        result = await feed.next()
    assert result["errors"][0]["extensions"]["code"] == "UNAUTHENTICATED"
