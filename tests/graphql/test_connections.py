"""Connection guards on real sockets: idle, trickled headers and trickled bodies are closed; a flood gets 503."""

from __future__ import annotations

import asyncio
import contextlib
import json
import urllib.request
from collections.abc import Iterator

import pytest

from harness.chain_support import eventually
from harness.proofloop import ServerProcess, free_port

MAX_CONNECTIONS = 20
GUARDS = {
    "PROOFLOOP_HEADER_TIMEOUT_SECONDS": "1",
    "PROOFLOOP_BODY_TIMEOUT_SECONDS": "1",
    "PROOFLOOP_BODY_MIN_RATE_BYTES": "1000",
    "PROOFLOOP_KEEP_ALIVE_SECONDS": "1",
    "PROOFLOOP_MAX_HEADER_BYTES": "8192",
    "PROOFLOOP_MAX_CONNECTIONS": str(MAX_CONNECTIONS),
}
# How long a test waits for the server to act on a 1 s deadline (generous: the machine is shared).
PATIENCE = 15.0


@pytest.fixture(scope="module")
def guarded(service_env: dict[str, str]) -> Iterator[ServerProcess]:
    with ServerProcess({**service_env, **GUARDS}, port=free_port()) as proc:
        yield proc


@pytest.fixture(scope="module")
def crowded(service_env: dict[str, str]) -> Iterator[ServerProcess]:
    """The same guards with a header deadline far beyond the test: a silent flood stays connected for as
    long as a loaded machine takes to open it and ask, rather than the 1 s the deadline tests need."""
    with ServerProcess(
        {**service_env, **GUARDS, "PROOFLOOP_HEADER_TIMEOUT_SECONDS": "120"}, port=free_port()
    ) as proc:
        yield proc


async def connect(server: ServerProcess) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    return await asyncio.open_connection("127.0.0.1", server.port)


async def read_until_closed(reader: asyncio.StreamReader) -> bytes:
    """Everything the server sends until it closes the connection (fails if it never does).

    Read as it arrives: a byte the client still trickles after the server's close meets a closed socket,
    which answers with a reset, and a reader waiting for the end would lose what it had not taken yet."""

    async def until_closed() -> bytes:
        received = b""
        while True:
            try:
                chunk = await reader.read(65536)
            except ConnectionResetError:
                return received  # closed after its answer: the reset is the close
            if not chunk:
                return received
            received += chunk

    return await asyncio.wait_for(until_closed(), PATIENCE)


async def trickle(writer: asyncio.StreamWriter, data: bytes, every: float = 0.2) -> None:
    """Send one byte at a time until the server hangs up."""
    try:
        for byte in data:
            writer.write(bytes([byte]))
            await writer.drain()
            await asyncio.sleep(every)
    except (ConnectionError, OSError):
        return


async def hang_up(writer: asyncio.StreamWriter) -> None:
    writer.close()
    with contextlib.suppress(ConnectionError, OSError):
        await writer.wait_closed()


def healthz(server: ServerProcess) -> int:
    with urllib.request.urlopen(f"{server.url}/healthz", timeout=PATIENCE) as response:
        status: int = response.status
        return status


async def test_a_socket_that_never_speaks_is_closed(guarded: ServerProcess) -> None:
    reader, writer = await connect(guarded)
    answer = await read_until_closed(reader)
    assert answer.startswith(b"HTTP/1.1 408")
    await hang_up(writer)


async def test_trickled_headers_are_cut_off(guarded: ServerProcess) -> None:
    reader, writer = await connect(guarded)
    request = b"GET /healthz HTTP/1.1\r\nhost: x\r\n" + b"x-slow: " + b"a" * 200 + b"\r\n\r\n"
    sender = asyncio.create_task(trickle(writer, request))
    answer = await read_until_closed(reader)
    sender.cancel()
    assert answer.startswith(b"HTTP/1.1 408")
    await hang_up(writer)


async def test_a_trickled_body_is_refused_and_closed(guarded: ServerProcess) -> None:
    reader, writer = await connect(guarded)
    body = json.dumps({"query": "{ __typename }", "padding": "x" * 2000}).encode()
    head = (
        b"POST /graphql HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\n"
        b"content-length: " + str(len(body)).encode() + b"\r\n\r\n"
    )
    writer.write(head)
    await writer.drain()
    sender = asyncio.create_task(trickle(writer, body))
    answer = await read_until_closed(reader)
    sender.cancel()
    status, _, rest = answer.partition(b"\r\n")
    assert status == b"HTTP/1.1 408 Request Timeout"
    error = json.loads(rest.partition(b"\r\n\r\n")[2])["errors"][0]
    assert error["extensions"] == {"code": "BAD_USER_INPUT", "field": "body"}
    await hang_up(writer)


async def test_a_body_sent_at_a_fair_pace_passes(guarded: ServerProcess) -> None:
    reader, writer = await connect(guarded)
    body = json.dumps({"query": "{ __typename }", "padding": "x" * 3000}).encode()
    head = (
        b"POST /graphql HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\nconnection: close\r\n"
        b"content-length: " + str(len(body)).encode() + b"\r\n\r\n"
    )
    writer.write(head)
    for start in range(0, len(body), 500):  # 3 KB over ~1.2 s: more than the 1 s base, within the rate
        writer.write(body[start : start + 500])
        await writer.drain()
        await asyncio.sleep(0.2)
    answer = await read_until_closed(reader)
    assert answer.startswith(b"HTTP/1.1 200")
    await hang_up(writer)


async def test_oversized_headers_are_refused(guarded: ServerProcess) -> None:
    reader, writer = await connect(guarded)
    writer.write(b"GET /healthz HTTP/1.1\r\nhost: x\r\nx-big: " + b"a" * 20_000 + b"\r\n\r\n")
    await writer.drain()
    answer = await read_until_closed(reader)
    assert answer.startswith(b"HTTP/1.1 431")
    await hang_up(writer)


async def test_an_idle_kept_alive_connection_is_closed(guarded: ServerProcess) -> None:
    reader, writer = await connect(guarded)
    writer.write(b"GET /healthz HTTP/1.1\r\nhost: x\r\n\r\n")
    await writer.drain()
    answer = await read_until_closed(reader)  # the response, then the close after the keep-alive timeout
    assert answer.startswith(b"HTTP/1.1 200")
    assert answer.count(b"HTTP/1.1") == 1
    await hang_up(writer)


def healthz_status(server: ServerProcess) -> int:
    try:
        return healthz(server)
    except urllib.error.HTTPError as refused:
        refused.close()
        return refused.code


async def test_connections_over_the_limit_get_503_until_the_flood_leaves(crowded: ServerProcess) -> None:
    flood = [await connect(crowded) for _ in range(MAX_CONNECTIONS)]

    async def refused() -> bool:  # the server counts a socket once its loop has accepted it
        return await asyncio.to_thread(healthz_status, crowded) == 503

    await eventually(refused, PATIENCE, f"{MAX_CONNECTIONS} silent sockets fill the server: 503")
    for _, writer in flood:
        await hang_up(writer)

    async def served() -> bool:
        return await asyncio.to_thread(healthz_status, crowded) == 200

    await eventually(served, PATIENCE, "once the flood hangs up, the server serves again")


async def test_healthz_answers_while_slow_clients_hold_connections(guarded: ServerProcess) -> None:
    sockets = [await connect(guarded) for _ in range(MAX_CONNECTIONS // 2)]
    senders = [
        asyncio.create_task(trickle(writer, b"GET / HTTP/1.1\r\nhost: x\r\nx-slow: " + b"a" * 100))
        for _, writer in sockets[: MAX_CONNECTIONS // 4]
    ]
    statuses = [await asyncio.to_thread(healthz, guarded) for _ in range(10)]
    assert statuses == [200] * 10
    for sender in senders:
        sender.cancel()
    for reader, writer in sockets:
        await read_until_closed(reader)
        await hang_up(writer)
