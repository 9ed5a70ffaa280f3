"""Errors that echo their input are bounded, through the real API: an object literal wider than any input
type is one short error before the spec's rules run (they would print it in each of up to 100 errors), on
HTTP and on a websocket; many small invalid literals stop at 20 errors, each message at 1,000 characters."""

from __future__ import annotations

import json

import httpx
import websockets

from harness.proofloop import ApiClient, ServerProcess, local_http
from schema.bounded_validation import MAX_MESSAGE_CHARS, MAX_VALIDATION_ERRORS

WIDE = " ".join(f"x{n}:1" for n in range(325))


async def post(server: ServerProcess, document: str, token: str | None = None) -> httpx.Response:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    async with local_http(base_url=server.url) as http:
        return await http.post("/graphql", json={"query": document}, headers=headers)


async def test_a_literal_wider_than_any_input_is_one_short_error(server: ServerProcess) -> None:
    answer = await post(server, f"mutation {{ taskCreate(input: {{{WIDE}}}) {{ clientMutationId }} }}")
    [error] = answer.json()["errors"]
    assert error["extensions"]["code"] == "GRAPHQL_VALIDATION_FAILED"
    assert "325 fields" in error["message"] and len(answer.content) < 1_000


async def test_many_invalid_literals_stop_at_the_bound(server: ServerProcess, api: ApiClient) -> None:
    token, _ = await api.register()
    wide_enough = " ".join(f"x{n}:1" for n in range(6))  # no wider than an input may be, yet no sample
    samples = ", ".join(f"{{{wide_enough}}}" for _ in range(120))
    document = f'mutation {{ proofLocationsReport(input: {{instanceId: "x", samples: [{samples}]}}) {{ clientMutationId }} }}'
    answer = await post(server, document, token)
    errors = answer.json()["errors"]
    assert len(errors) == MAX_VALIDATION_ERRORS + 1  # and graphql-core's "too many validation errors"
    assert all(len(e["message"]) <= MAX_MESSAGE_CHARS + 40 for e in errors)
    assert len(answer.content) < 60_000


async def test_a_wide_literal_in_a_subscribe_frame_is_one_short_error(
    server: ServerProcess, api: ApiClient
) -> None:
    token, _ = await api.register()
    url = server.url.replace("http://", "ws://") + "/graphql"
    async with websockets.connect(url, subprotocols=[websockets.Subprotocol("graphql-transport-ws")]) as ws:
        await ws.send(
            json.dumps({"type": "connection_init", "payload": {"Authorization": f"Bearer {token}"}})
        )
        await ws.recv()
        query = f"subscription {{ verificationEvents(userId: {{{WIDE}}}) {{ id }} }}"
        await ws.send(json.dumps({"id": "1", "type": "subscribe", "payload": {"query": query}}))
        frame = await ws.recv()
    decoded = json.loads(frame)
    assert decoded["type"] == "error" and len(decoded["payload"]) == 1 and len(frame) < 1_000
    assert "325 fields" in decoded["payload"][0]["message"]
