"""A catalogue of malformed websocket frames, on both protocols: each closes its socket with 4400 and a
reason, and the server stays up for everyone else. Plus the legacy protocol's `ka` keep-alives and queries.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from gql import Client, GraphQLRequest
from gql.transport.websockets import WebsocketsTransport
from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import ConnectionClosed

from harness.proofloop import ApiClient, ServerProcess, free_port

TRANSPORT_WS = "graphql-transport-ws"
LEGACY = "graphql-ws"
SUBSCRIBE = {"query": "subscription { verificationEvents { id } }"}

# frames wrong for either protocol (text unless bytes)
COMMON: list[str | bytes] = [
    "[]",
    '[{"type": "connection_init"}]',
    '"connection_init"',
    "42",
    "null",
    "{}",
    '{"type": 5}',
    '{"type": "no-such-type"}',
    "not json at all",
    b"\x00\x01binary",
]
TRANSPORT_WS_ONLY: list[str | bytes] = [
    '{"type": "subscribe"}',
    '{"type": "subscribe", "id": 7, "payload": {"query": "{ __typename }"}}',
    '{"type": "subscribe", "id": "1"}',
    '{"type": "subscribe", "id": "1", "payload": []}',
    '{"type": "subscribe", "id": "1", "payload": {"query": 5}}',
    '{"type": "subscribe", "id": "1", "payload": {"query": "{ __typename }", "variables": [1]}}',
    '{"type": "complete"}',
    '{"type": "ping", "payload": "x"}',
]
LEGACY_ONLY: list[str | bytes] = [
    '{"type": "start", "id": "1", "payload": {}}',
    '{"type": "start", "id": "1"}',
    '{"type": "start", "payload": {"query": "{ __typename }"}}',
    '{"type": "start", "id": "1", "payload": {"query": "{ __typename }", "operationName": 3}}',
    '{"type": "stop"}',
    '{"type": "connection_init", "payload": [1]}',
]


@pytest.fixture(scope="module")
def ws_api(service_env: dict[str, str]) -> Iterator[ServerProcess]:
    with ServerProcess(service_env, port=free_port()) as proc:
        yield proc


def ws_url(server: ServerProcess) -> str:
    return server.url.replace("http://", "ws://") + "/graphql"


async def receive_json(socket: ClientConnection) -> dict[str, Any]:
    message: dict[str, Any] = json.loads(await socket.recv())
    return message


async def initialised(socket: ClientConnection, protocol: str, token: str) -> None:
    await socket.send(
        json.dumps({"type": "connection_init", "payload": {"Authorization": f"Bearer {token}"}})
    )
    assert (await receive_json(socket))["type"] == "connection_ack"


async def close_after(
    server: ServerProcess, protocol: str, token: str, frame: str | bytes
) -> tuple[int, str]:
    async with connect(ws_url(server), subprotocols=[protocol]) as socket:  # type: ignore[list-item]
        await initialised(socket, protocol, token)
        await socket.send(frame)
        try:
            while True:  # a legacy `ka` may come first
                await socket.recv()
        except ConnectionClosed as closed:
            assert closed.rcvd is not None, "the server never sent a close frame"
            return closed.rcvd.code, closed.rcvd.reason


CATALOGUE = [(TRANSPORT_WS, f) for f in COMMON + TRANSPORT_WS_ONLY] + [
    (LEGACY, f) for f in COMMON + LEGACY_ONLY
]


async def test_every_malformed_frame_closes_with_4400_and_the_server_stays_up(ws_api: ServerProcess) -> None:
    async with ApiClient(ws_api.url) as api:
        token, user = await api.register()
    closes = {
        (protocol, str(frame)): await close_after(ws_api, protocol, token, frame)
        for protocol, frame in CATALOGUE
    }
    assert {key: code for key, (code, _) in closes.items() if code != 4400} == {}
    assert all(reason for _, reason in closes.values())

    # everyone else is still served, on both protocols and over HTTP
    for protocol in (WebsocketsTransport.GRAPHQLWS_SUBPROTOCOL, WebsocketsTransport.APOLLO_SUBPROTOCOL):
        transport = WebsocketsTransport(
            url=ws_url(ws_api), subprotocols=[protocol], init_payload={"Authorization": f"Bearer {token}"}
        )
        async with Client(transport=transport, fetch_schema_from_transport=False) as session:
            assert (await session.execute(GraphQLRequest("{ me { id } }")))["me"]["id"] == user["id"]
    async with ApiClient(ws_api.url) as api:
        assert (await api.execute("{ me { id } }", token=token))["me"]["id"] == user["id"]
    assert "Exception in ASGI application" not in ws_api.log()
    assert "Traceback" not in ws_api.log()


async def test_the_legacy_protocol_keeps_alive_and_answers_queries(ws_api: ServerProcess) -> None:
    async with ApiClient(ws_api.url) as api:
        token, user = await api.register()
    async with connect(ws_url(ws_api), subprotocols=[LEGACY]) as socket:  # type: ignore[list-item]
        await initialised(socket, LEGACY, token)
        assert (await receive_json(socket))["type"] == "ka"
        await socket.send(json.dumps({"type": "start", "id": "q", "payload": {"query": "{ me { id } }"}}))
        messages = [await receive_json(socket) for _ in range(2)]
        data = next(m for m in messages if m["type"] == "data")
        assert data["payload"] == {"data": {"me": {"id": user["id"]}}}
        await socket.send(json.dumps({"type": "start", "id": "s", "payload": SUBSCRIBE}))
        await socket.send(json.dumps({"type": "stop", "id": "s"}))
        await socket.send(json.dumps({"type": "connection_terminate"}))
