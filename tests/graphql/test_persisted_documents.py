"""Persisted (trusted) documents: a manifest, `documentId` or Apollo's persistedQuery hash, on HTTP (POST and
GET) and websockets; with PROOFLOOP_PERSISTED_DOCUMENTS_ONLY every other document is refused everywhere.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from websockets.asyncio.client import connect

from harness.proofloop import ApiClient, ServerProcess, free_port, local_http

ME = "query Me { me { id displayName } }"
ME_ID = "me-v1"
REGISTER = """mutation Register($e: String!, $p: String!, $n: String!) {
  register(email: $e, password: $p, displayName: $n) { token user { id } } }"""
REGISTER_HASH = hashlib.sha256(REGISTER.encode()).hexdigest()
# over every size and token limit: a persisted document is known, so none applies to it
BIG = "query Big { me { id } }\n#" + "x" * 40_000


@pytest.fixture(scope="module")
def trusted_api(
    service_env: dict[str, str], tmp_path_factory: pytest.TempPathFactory
) -> Iterator[ServerProcess]:
    manifest = tmp_path_factory.mktemp("persisted") / "manifest.json"
    # Apollo's manifest format; the register document is found by the SHA-256 of its text
    manifest.write_text(
        json.dumps(
            {
                "format": "apollo-persisted-query-manifest",
                "version": 1,
                "operations": [
                    {"id": ME_ID, "name": "Me", "type": "query", "body": ME},
                    {"id": "register-v1", "name": "Register", "type": "mutation", "body": REGISTER},
                    {"id": "big-v1", "name": "Big", "type": "query", "body": BIG},
                ],
            }
        )
    )
    env = {
        **service_env,
        "PROOFLOOP_PERSISTED_DOCUMENTS": str(Path(manifest)),
        "PROOFLOOP_PERSISTED_DOCUMENTS_ONLY": "true",
    }
    with ServerProcess(env, port=free_port()) as proc:
        yield proc


async def post(server: ServerProcess, body: dict[str, Any], token: str | None = None) -> httpx.Response:
    headers = {"authorization": f"Bearer {token}"} if token else {}
    async with local_http() as http:
        return await http.post(f"{server.url}/graphql", json=body, headers=headers)


async def registered(server: ServerProcess) -> tuple[str, str]:
    apq = {"version": 1, "sha256Hash": REGISTER_HASH}
    name = "trusted-" + hashlib.sha1(str(id(server)).encode()).hexdigest()[:6]
    response = await post(
        server,
        {
            "extensions": {"persistedQuery": apq},
            "variables": {"e": f"{name}-{free_port()}@example.com", "p": "correct horse battery", "n": name},
        },
    )
    data = response.json()["data"]["register"]
    return data["token"], name


async def test_persisted_documents_run_by_id_and_by_hash(trusted_api: ServerProcess) -> None:
    token, name = await registered(trusted_api)
    by_id = await post(trusted_api, {"documentId": ME_ID}, token)
    assert by_id.json()["data"]["me"]["displayName"] == name
    by_hash = await post(
        trusted_api, {"documentId": "sha256:" + hashlib.sha256(ME.encode()).hexdigest()}, token
    )
    assert by_hash.json() == by_id.json()
    async with local_http() as http:
        over_get = await http.get(
            f"{trusted_api.url}/graphql",
            params={"documentId": ME_ID},
            headers={"authorization": f"Bearer {token}", "accept": "application/json"},
        )
    assert over_get.json() == by_id.json()
    # the document's own text is trusted too (a client that sends both)
    assert (await post(trusted_api, {"query": ME}, token)).json() == by_id.json()


async def test_persisted_documents_are_exempt_from_the_document_limits(trusted_api: ServerProcess) -> None:
    token, _ = await registered(trusted_api)
    for body in ({"documentId": "big-v1"}, {"query": BIG}):
        assert (await post(trusted_api, body, token)).json()["data"]["me"]["id"]
        assert (await post(trusted_api, body)).json()["errors"][0]["extensions"]["code"] == "UNAUTHENTICATED"


async def test_unknown_ids_and_untrusted_documents_are_refused(trusted_api: ServerProcess) -> None:
    token, _ = await registered(trusted_api)
    unknown = await post(trusted_api, {"documentId": "me-v2"}, token)
    assert unknown.status_code == 404
    assert unknown.json()["errors"][0]["extensions"]["code"] == "PERSISTED_QUERY_NOT_FOUND"
    untrusted = await post(trusted_api, {"query": "{ me { id email } }"}, token)
    assert untrusted.status_code == 400
    assert untrusted.json()["errors"][0]["extensions"]["code"] == "FORBIDDEN"


async def test_websockets_follow_the_same_manifest(trusted_api: ServerProcess) -> None:
    token, name = await registered(trusted_api)
    url = trusted_api.url.replace("http://", "ws://") + "/graphql"
    async with connect(url, subprotocols=["graphql-transport-ws"]) as socket:  # type: ignore[list-item]
        await socket.send(
            json.dumps({"type": "connection_init", "payload": {"Authorization": f"Bearer {token}"}})
        )
        assert json.loads(await socket.recv())["type"] == "connection_ack"
        await socket.send(json.dumps({"type": "subscribe", "id": "1", "payload": {"documentId": ME_ID}}))
        assert json.loads(await socket.recv())["payload"]["data"]["me"]["displayName"] == name
        assert json.loads(await socket.recv()) == {"id": "1", "type": "complete"}
        await socket.send(
            json.dumps({"type": "subscribe", "id": "2", "payload": {"query": "{ me { email } }"}})
        )
        refused = json.loads(await socket.recv())
    assert refused["type"] == "error"
    assert refused["payload"][0]["extensions"]["code"] == "FORBIDDEN"


async def test_without_a_manifest_free_documents_run(server: ServerProcess, api: ApiClient) -> None:
    token, _ = await api.register()
    assert "errors" not in (await post(server, {"query": "{ me { id } }"}, token)).json()


async def test_automatic_persisted_queries_are_not_supported_when_only_the_manifest_runs(
    trusted_api: ServerProcess,
) -> None:
    token, _ = await registered(trusted_api)
    query = "{ me { email } }"
    apq = {"persistedQuery": {"version": 1, "sha256Hash": hashlib.sha256(query.encode()).hexdigest()}}
    # Apollo's link stops hashing on this answer and sends the text, which the manifest then decides
    for body in ({"extensions": apq}, {"query": query, "extensions": apq}):
        refused = await post(trusted_api, body, token)
        assert refused.status_code == 200
        assert refused.json() == {
            "errors": [
                {
                    "message": "PersistedQueryNotSupported",
                    "extensions": {"code": "PERSISTED_QUERY_NOT_SUPPORTED"},
                }
            ]
        }
    assert (await post(trusted_api, {"query": query}, token)).json()["errors"][0]["extensions"]["code"] == (
        "FORBIDDEN"
    )


async def test_the_readiness_probe_runs_when_only_the_manifest_runs(trusted_api: ServerProcess) -> None:
    for probe in ("{__typename}", "{ __typename }", "query {\n  __typename\n}"):
        assert (await post(trusted_api, {"query": probe})).json() == {"data": {"__typename": "Query"}}
    async with local_http() as http:
        over_get = await http.get(
            f"{trusted_api.url}/graphql",
            params={"query": "{__typename}"},
            headers={"accept": "application/json"},
        )
    assert over_get.json() == {"data": {"__typename": "Query"}}
    for other in ("{ __typename me { id } }", "query Probe { __typename }", "{ a: __typename }"):
        refused = await post(trusted_api, {"query": other})
        assert refused.json()["errors"][0]["extensions"]["code"] == "FORBIDDEN"
