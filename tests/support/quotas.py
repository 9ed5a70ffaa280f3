"""Quotas: the documents, an open websocket and its acknowledgement."""

from __future__ import annotations

import asyncio
import json

import websockets
from websockets.asyncio.client import ClientConnection

from harness.proofloop import ServerProcess

QUOTAS = {
    "PROOFLOOP_MAX_TASKS_PER_USER": "3",
    "PROOFLOOP_MAX_PROOF_ATTEMPTS": "2",
    "PROOFLOOP_MAX_INVITES_PER_DAY": "3",
    "PROOFLOOP_MAX_SOCKETS_PER_USER": "2",
    "PROOFLOOP_MAX_SUBSCRIPTIONS_PER_USER": "3",
}


CHECK_IN = """mutation($i: ID!) {
  checkIn(instanceId: $i, location: {latitude: 0, longitude: 0}, accuracyMeters: 10) { status reason }
}"""


async def open_socket(server: ServerProcess, token: str) -> ClientConnection:
    url = server.url.replace("http://", "ws://") + "/graphql"
    socket = await websockets.connect(url, subprotocols=[websockets.Subprotocol("graphql-transport-ws")])
    await socket.send(
        json.dumps({"type": "connection_init", "payload": {"Authorization": f"Bearer {token}"}})
    )
    return socket


async def acked(socket: ClientConnection) -> None:
    assert json.loads(await asyncio.wait_for(socket.recv(), 10)) == {"type": "connection_ack"}
