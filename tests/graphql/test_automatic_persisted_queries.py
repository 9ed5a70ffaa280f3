"""Apollo's automatic persisted queries without a manifest: a hash the server does not know is answered as
Apollo's link expects, the query sent with its hash is checked, run and learned, and the hash alone then
runs it, over POST and GET; only documents that passed validation are learned, within the document limits.
"""

from __future__ import annotations

import hashlib
import json
import uuid
from typing import Any

import httpx
from websockets.asyncio.client import connect

from harness.proofloop import ApiClient, ServerProcess, local_http


def sha256(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def fresh(document: str) -> str:
    """A document no other test sent (the server's store is shared by every test on it)."""
    return f"{document}\n# {uuid.uuid4().hex}"


def apq(document: str) -> dict[str, Any]:
    return {"persistedQuery": {"version": 1, "sha256Hash": sha256(document)}}


async def post(server: ServerProcess, body: dict[str, Any], token: str | None = None) -> httpx.Response:
    headers = {"authorization": f"Bearer {token}"} if token else {}
    async with local_http() as http:
        return await http.post(f"{server.url}/graphql", json=body, headers=headers)


async def get(server: ServerProcess, params: dict[str, str], token: str) -> httpx.Response:
    # as Apollo's HttpLink sends a hashed query with useGETForHashedQueries
    headers = {
        "authorization": f"Bearer {token}",
        "accept": "application/graphql-response+json,application/json;q=0.9",
    }
    async with local_http() as http:
        return await http.get(f"{server.url}/graphql", params=params, headers=headers)


def assert_not_found(response: httpx.Response) -> None:
    assert response.status_code == 200
    assert response.json() == {
        "errors": [{"message": "PersistedQueryNotFound", "extensions": {"code": "PERSISTED_QUERY_NOT_FOUND"}}]
    }
    assert response.headers["cache-control"] == "private, no-cache, must-revalidate"


async def test_a_miss_is_filled_by_the_query_and_then_the_hash_alone_runs_it(
    server: ServerProcess, api: ApiClient
) -> None:
    token, user = await api.register()
    me = fresh("query Me { me { id } }")
    assert_not_found(await post(server, {"extensions": apq(me)}, token))
    sent = await post(server, {"query": me, "extensions": apq(me)}, token)
    assert sent.json() == {"data": {"me": {"id": user["id"]}}}
    hit = await post(server, {"extensions": apq(me), "operationName": "Me"}, token)
    assert hit.json() == sent.json()


async def test_hashed_queries_work_over_get(server: ServerProcess, api: ApiClient) -> None:
    token, user = await api.register()
    me = fresh("query Me { me { id } }")
    params = {"operationName": "Me", "variables": "{}", "extensions": json.dumps(apq(me))}
    assert_not_found(await get(server, params, token))
    # Apollo's link retries a miss as a POST carrying the query
    assert (await post(server, {"query": me, "extensions": apq(me)}, token)).json()["data"]["me"]
    hit = await get(server, params, token)
    assert hit.status_code == 200
    assert hit.json() == {"data": {"me": {"id": user["id"]}}}
    assert (await get(server, {**params, "query": me}, token)).json() == hit.json()


async def test_a_query_whose_hash_does_not_match_is_refused_and_not_learned(
    server: ServerProcess, api: ApiClient
) -> None:
    token, _ = await api.register()
    me, other = fresh("{ me { id } }"), fresh("{ me { displayName } }")
    refused = await post(server, {"query": me, "extensions": apq(other)}, token)
    assert refused.status_code == 400
    error = refused.json()["errors"][0]
    assert error["extensions"] == {"code": "BAD_USER_INPUT", "field": "extensions"}
    assert "sha256Hash" in error["message"]
    assert_not_found(await post(server, {"extensions": apq(other)}, token))
    assert_not_found(await post(server, {"extensions": apq(me)}, token))


async def test_only_documents_that_pass_validation_are_learned(server: ServerProcess, api: ApiClient) -> None:
    token, _ = await api.register()
    invalid = fresh("{ me { noSuchField } }")
    sent = await post(server, {"query": invalid, "extensions": apq(invalid)}, token)
    assert sent.json()["errors"][0]["extensions"]["code"] == "GRAPHQL_VALIDATION_FAILED"
    assert_not_found(await post(server, {"extensions": apq(invalid)}, token))
    # a variable error leaves the document valid: it is learned
    typed = fresh("query($b: Boolean!) { me @include(if: $b) { id } }")
    missing = await post(server, {"query": typed, "extensions": apq(typed)}, token)
    assert missing.json()["errors"][0]["extensions"]["code"] == "BAD_USER_INPUT"
    hit = await post(server, {"extensions": apq(typed), "variables": {"b": True}}, token)
    assert hit.json()["data"]["me"]["id"]


async def test_the_document_limits_apply_to_the_query_sent_with_its_hash(server: ServerProcess) -> None:
    # anonymous callers may send 4 KiB (PROOFLOOP_ANONYMOUS_MAX_DOCUMENT_BYTES)
    big = "{ __typename }\n#" + "x" * 5000
    refused = await post(server, {"query": big, "extensions": apq(big)})
    assert refused.status_code == 413
    assert refused.json()["errors"][0]["extensions"]["code"] == "PAYLOAD_TOO_LARGE"
    assert_not_found(await post(server, {"extensions": apq(big)}))


async def test_an_unknown_version_is_refused(server: ServerProcess) -> None:
    probe = fresh("{ __typename }")
    body = {"query": probe, "extensions": {"persistedQuery": {"version": 2, "sha256Hash": sha256(probe)}}}
    refused = await post(server, body)
    assert refused.status_code == 400
    assert refused.json()["errors"][0]["extensions"] == {"code": "BAD_USER_INPUT", "field": "extensions"}


async def test_websockets_find_what_http_taught_and_check_a_sent_hash(
    server: ServerProcess, api: ApiClient
) -> None:
    token, user = await api.register()
    learned, sent, wrong = fresh("{ me { id } }"), fresh("{ me { id } }"), fresh("{ me { id } }")
    assert (await post(server, {"query": learned, "extensions": apq(learned)}, token)).json()["data"]
    url = server.url.replace("http://", "ws://") + "/graphql"
    async with connect(url, subprotocols=["graphql-transport-ws"]) as socket:  # type: ignore[list-item]
        await socket.send(
            json.dumps({"type": "connection_init", "payload": {"Authorization": f"Bearer {token}"}})
        )
        assert json.loads(await socket.recv())["type"] == "connection_ack"
        for number, payload in enumerate(
            ({"extensions": apq(learned)}, {"query": sent, "extensions": apq(sent)}), start=1
        ):
            await socket.send(json.dumps({"type": "subscribe", "id": str(number), "payload": payload}))
            assert json.loads(await socket.recv())["payload"] == {"data": {"me": {"id": user["id"]}}}
            assert json.loads(await socket.recv()) == {"id": str(number), "type": "complete"}
        await socket.send(
            json.dumps({"type": "subscribe", "id": "3", "payload": {"query": wrong, "extensions": apq(sent)}})
        )
        refused = json.loads(await socket.recv())
    assert refused["type"] == "error"
    assert refused["payload"][0]["extensions"]["code"] == "BAD_USER_INPUT"
