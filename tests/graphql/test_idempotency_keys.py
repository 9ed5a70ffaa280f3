"""Idempotency-Key through the real API: a mutation retried with its key runs once and every retry gets its
first answer (uploads included); concurrent copies run once; a key names one request of one user; queries
and anonymous requests ignore it; a key past its keeping time runs again; bad keys are refused."""

from __future__ import annotations

import asyncio
import json
import uuid
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
import websockets

from harness.media_factory import photo
from harness.proofloop import GraphQLFailure, create_open_task, file_var, local_http, open_schedule
from tests.support.backends import Backend, Deployment, deployed

KEEP_SECONDS = 600
CREATE = "mutation($input: CreateTaskInput!) { createTask(input: $input) { id title } }"
TASKS = "{ tasks(first: 100) { totalCount } }"
PHOTO = "mutation($id: ID!, $photo: Upload!) { submitPhoto(instanceId: $id, photo: $photo) { id status } }"
PROOFS = "query($id: ID!) { node(id: $id) { ... on TaskInstance { verifications { id } } } }"


@pytest.fixture(scope="module")
def running(backend: Backend, request: pytest.FixtureRequest) -> Iterator[Deployment]:
    settings = {"PROOFLOOP_IDEMPOTENCY_KEY_SECONDS": str(KEEP_SECONDS)}
    with deployed(request, backend, settings, api_only=True) as deployment:
        yield deployment


def task_input(title: str = "Run") -> dict[str, Any]:
    return {"title": title, "method": "PHOTO", "schedule": open_schedule(starts_in_seconds=3600)}


async def post(
    http: httpx.AsyncClient, token: str | None, key: str | None, document: str, variables: dict[str, Any]
) -> httpx.Response:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    if key is not None:
        headers["Idempotency-Key"] = key
    return await http.post("/graphql", json={"query": document, "variables": variables}, headers=headers)


async def task_count(running: Deployment, token: str) -> int:
    count: int = (await running.client().execute(TASKS, token=token))["tasks"]["totalCount"]
    return count


@pytest.mark.both_backends
async def test_a_retried_mutation_runs_once_and_gets_its_first_answer(running: Deployment) -> None:
    token, _ = await running.client().register()
    key = str(uuid.uuid4())
    same = {"input": task_input()}  # a retry sends the very request (startsAt moves with the clock)
    async with local_http(base_url=running.url) as http:
        first = await post(http, token, key, CREATE, same)
        again = await post(http, token, f'"{key}"', CREATE, same)  # quoted: the same key
        other = await post(http, token, str(uuid.uuid4()), CREATE, {"input": task_input()})
    assert first.status_code == 200 and "idempotent-replayed" not in first.headers, first.text
    assert first.json()["data"]["createTask"]["id"], first.text
    assert (again.status_code, again.headers.get("idempotent-replayed")) == (200, "true"), again.text
    assert again.json() == first.json()
    assert other.json()["data"]["createTask"]["id"] != first.json()["data"]["createTask"]["id"]
    assert await task_count(running, token) == 2


@pytest.mark.both_backends
async def test_concurrent_requests_with_one_key_run_once(running: Deployment) -> None:
    token, _ = await running.client().register()
    key = str(uuid.uuid4())
    async with local_http(base_url=running.url, timeout=60) as http:
        same = {"input": task_input()}
        answers = await asyncio.gather(*(post(http, token, key, CREATE, same) for _ in range(8)))
    assert all(a.status_code == 200 for a in answers), [a.text for a in answers]
    assert len({a.json()["data"]["createTask"]["id"] for a in answers}) == 1
    assert sum("idempotent-replayed" not in a.headers for a in answers) == 1  # one ran, seven were told
    assert await task_count(running, token) == 1


@pytest.mark.both_backends
async def test_a_key_names_one_request_of_one_user(running: Deployment) -> None:
    token, _ = await running.client().register()
    someone, _ = await running.client().register()
    key = str(uuid.uuid4())
    async with local_http(base_url=running.url) as http:
        first = await post(http, token, key, CREATE, {"input": task_input("Run")})
        changed = await post(http, token, key, CREATE, {"input": task_input("Swim")})
        theirs = await post(http, someone, key, CREATE, {"input": task_input("Swim")})
    assert first.status_code == 200, first.text
    assert changed.status_code == 422
    error = changed.json()["errors"][0]
    assert error["extensions"] == {"code": "BAD_USER_INPUT", "field": "idempotency-key"}, error
    assert theirs.json()["data"]["createTask"]["title"] == "Swim"  # another user's key is another key
    assert "idempotent-replayed" not in theirs.headers
    assert await task_count(running, token) == 1
    assert await task_count(running, someone) == 1


@pytest.mark.both_backends
async def test_a_photo_retried_with_its_key_is_one_proof(running: Deployment) -> None:
    api = running.client()
    token, _ = await api.register()
    _, instance_id = await create_open_task(api, token, "PHOTO")
    key = {"Idempotency-Key": str(uuid.uuid4())}

    async def send(seed: int) -> dict[str, Any]:
        variables = {"id": instance_id, "photo": file_var(photo(seed))}
        return await api.execute(PHOTO, variables, token=token, upload_files=True, headers=key)

    first = await send(31)
    again = await send(31)
    assert again == first
    assert first["submitPhoto"]["status"] == "ACCEPTED", first
    with pytest.raises(GraphQLFailure) as refused:  # another photo under the same key
        await send(32)
    assert (refused.value.code, refused.value.field) == ("BAD_USER_INPUT", "idempotency-key")
    proofs = (await api.execute(PROOFS, {"id": instance_id}, token=token))["node"]["verifications"]
    assert [p["id"] for p in proofs] == [first["submitPhoto"]["id"]]


@pytest.mark.both_backends
async def test_queries_and_anonymous_requests_ignore_the_key(running: Deployment) -> None:
    token, _ = await running.client().register()
    key = str(uuid.uuid4())
    async with local_http(base_url=running.url) as http:
        before = await post(http, token, key, TASKS, {})
        await post(http, token, None, CREATE, {"input": task_input()})
        after = await post(http, token, key, TASKS, {})  # a query runs every time
        email = f"anon-{uuid.uuid4().hex[:8]}@example.com"
        register = 'mutation($e: String!) { register(email: $e, password: "correct horse battery", displayName: "A") { user { id } } }'
        anonymous = await post(http, None, key, register, {"e": email})
    assert before.json()["data"]["tasks"]["totalCount"] == 0
    assert after.json()["data"]["tasks"]["totalCount"] == 1
    assert "idempotent-replayed" not in after.headers
    assert anonymous.json()["data"]["register"]["user"]["id"]


@pytest.mark.both_backends
@pytest.mark.parametrize("key", ["", '""', "x" * 256, "tab\there", "naïve"])
async def test_a_malformed_key_is_refused_before_anything_runs(running: Deployment, key: str) -> None:
    token, _ = await running.client().register()
    async with local_http(base_url=running.url) as http:
        answer = await http.post(
            "/graphql",
            json={"query": CREATE, "variables": {"input": task_input()}},
            headers=[(b"authorization", f"Bearer {token}".encode()), (b"idempotency-key", key.encode())],
        )
    assert answer.status_code == 400, answer.text
    assert answer.json()["errors"][0]["extensions"] == {"code": "BAD_USER_INPUT", "field": "idempotency-key"}
    assert await task_count(running, token) == 0


@pytest.mark.both_backends
async def test_a_key_past_its_keeping_time_runs_again(running: Deployment) -> None:
    token, _ = await running.client().register()
    key = str(uuid.uuid4())
    async with local_http(base_url=running.url) as http:
        first = await post(http, token, key, CREATE, {"input": task_input()})
        # as if PROOFLOOP_IDEMPOTENCY_KEY_SECONDS had passed
        await running.sql("UPDATE idempotency_keys SET expires_at = created_at WHERE key = $1", key)
        later = await post(http, token, key, CREATE, {"input": task_input()})
    assert "idempotent-replayed" not in later.headers
    assert later.json()["data"]["createTask"]["id"] != first.json()["data"]["createTask"]["id"]
    assert await task_count(running, token) == 2


@pytest.mark.both_backends
async def test_an_answer_holding_a_secret_is_never_kept(running: Deployment) -> None:
    """changePassword answers a new bearer token: a retry is told the mutation ran, and no token rests in
    the keys' table (tokens are kept only as digests)."""
    token, _ = await running.client().register()
    key = str(uuid.uuid4())
    change = """mutation { changePassword(currentPassword: "correct horse battery",
                                          newPassword: "another long password") { token } }"""
    async with local_http(base_url=running.url) as http:
        first = await post(http, token, key, change, {})
        new_token = first.json()["data"]["changePassword"]["token"]
        again = await post(http, new_token, key, change, {})
    assert again.status_code == 409, again.text
    assert again.json()["errors"][0]["extensions"]["code"] == "CONFLICT"
    assert new_token not in again.text
    kept = await running.sql("SELECT answered, body FROM idempotency_keys WHERE key = $1", key)
    assert [(bool(answered), body) for answered, body in kept] == [(True, None)]


@pytest.mark.both_backends
async def test_a_request_refused_before_it_ran_gives_its_key_back(running: Deployment) -> None:
    """A document that fails validation ran nothing: the key is free for the request the client meant."""
    token, _ = await running.client().register()
    key = str(uuid.uuid4())
    invalid = "mutation($input: CreateTaskInput!) { createTask(input: $input) { id noSuchField } }"
    async with local_http(base_url=running.url) as http:
        refused = await post(http, token, key, invalid, {"input": task_input()})
        meant = await post(http, token, key, CREATE, {"input": task_input()})
    assert refused.json()["errors"][0]["extensions"]["code"] == "GRAPHQL_VALIDATION_FAILED", refused.text
    assert meant.json()["data"]["createTask"]["id"], meant.text
    assert "idempotent-replayed" not in meant.headers
    assert await task_count(running, token) == 1


async def ws_mutation(
    url: str, token: str, document: str, variables: dict[str, Any], key: str | None
) -> list[dict[str, Any]]:
    """The frames a graphql-transport-ws socket answers one operation with (its `next`s, then `complete`
    or its `error`), the key in payload.extensions as graphql-ws clients send extensions."""
    payload: dict[str, Any] = {"query": document, "variables": variables}
    if key is not None:
        payload["extensions"] = {"idempotencyKey": key}
    uri = url.replace("http://", "ws://") + "/graphql"
    async with websockets.connect(uri, subprotocols=[websockets.Subprotocol("graphql-transport-ws")]) as ws:
        await ws.send(
            json.dumps({"type": "connection_init", "payload": {"Authorization": f"Bearer {token}"}})
        )
        assert json.loads(await asyncio.wait_for(ws.recv(), 10))["type"] == "connection_ack"
        await ws.send(json.dumps({"id": "1", "type": "subscribe", "payload": payload}))
        frames: list[dict[str, Any]] = []
        while not frames or frames[-1]["type"] not in ("complete", "error"):
            frames.append(json.loads(await asyncio.wait_for(ws.recv(), 20)))
        return frames


@pytest.mark.both_backends
async def test_a_mutation_over_a_websocket_runs_once_by_its_key_and_replays_on_http_too(
    running: Deployment,
) -> None:
    token, _ = await running.client().register()
    key = str(uuid.uuid4())
    same = {"input": task_input()}
    first = await ws_mutation(running.url, token, CREATE, same, key)
    again = await ws_mutation(running.url, token, CREATE, same, key)
    assert [f["type"] for f in first] == [f["type"] for f in again] == ["next", "complete"], (first, again)
    assert "extensions" not in first[0]["payload"]
    assert again[0]["payload"]["extensions"] == {"idempotentReplayed": True}
    assert again[0]["payload"]["data"] == first[0]["payload"]["data"]
    # one request, one key, whichever transport: the same request over HTTP with the key is a replay
    async with local_http(base_url=running.url) as http:
        over_http = await post(http, token, key, CREATE, same)
    assert over_http.headers.get("idempotent-replayed") == "true", over_http.text
    assert over_http.json()["data"] == first[0]["payload"]["data"]
    assert await task_count(running, token) == 1

    other = await ws_mutation(running.url, token, CREATE, {"input": task_input("Other")}, key)
    assert other[-1]["type"] == "error"
    assert other[-1]["payload"][0]["extensions"] == {"code": "BAD_USER_INPUT", "field": "idempotencyKey"}
    bad = await ws_mutation(running.url, token, CREATE, same, "a key with spaces")
    assert bad[-1]["type"] == "error" and bad[-1]["payload"][0]["extensions"]["code"] == "BAD_USER_INPUT"
    # the key is its user's: another user's same key runs that user's own mutation
    stranger, _ = await running.client().register()
    theirs = await ws_mutation(running.url, stranger, CREATE, same, key)
    assert "extensions" not in theirs[0]["payload"]
    assert theirs[0]["payload"]["data"]["createTask"]["id"] != first[0]["payload"]["data"]["createTask"]["id"]
    assert await task_count(running, stranger) == 1
    # concurrent copies over sockets run once
    racing_key = str(uuid.uuid4())
    racing = {"input": task_input("Racing")}
    copies = await asyncio.gather(
        *(ws_mutation(running.url, token, CREATE, racing, racing_key) for _ in range(4))
    )
    assert len({c[0]["payload"]["data"]["createTask"]["id"] for c in copies}) == 1, copies
    assert sum("extensions" not in c[0]["payload"] for c in copies) == 1  # one ran, three were told
    # a query ignores the key; an unkeyed mutation runs as ever
    assert (await ws_mutation(running.url, token, TASKS, {}, key))[0]["payload"]["data"]["tasks"][
        "totalCount"
    ] == 2
    await ws_mutation(running.url, token, CREATE, {"input": task_input("Unkeyed")}, None)
    assert await task_count(running, token) == 3
