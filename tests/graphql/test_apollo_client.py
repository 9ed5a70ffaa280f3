"""Apollo Client's own persisted-queries link (npm @apollo/client) against the live API, POST and GET."""

from __future__ import annotations

import asyncio
import hashlib
import json
import shutil
import subprocess
import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from harness.proofloop import ROOT, ApiClient, ServerProcess, free_port, local_http

CLIENTS = ROOT / "tests" / "clients"
REGISTER = """mutation Register($e: String!, $p: String!, $n: String!) {
  register(email: $e, password: $p, displayName: $n) { token user { id } } }"""

pytestmark = pytest.mark.skipif(
    shutil.which("node") is None or not (CLIENTS / "node_modules" / "@apollo" / "client").exists(),
    reason="needs Node.js and `npm ci` in tests/clients (make test runs it)",
)


@pytest.fixture(scope="module")
def manifest_only_api(
    service_env: dict[str, str], tmp_path_factory: pytest.TempPathFactory
) -> Iterator[ServerProcess]:
    manifest = tmp_path_factory.mktemp("apollo") / "manifest.json"
    manifest.write_text(json.dumps({"register-v1": REGISTER}))
    env = {
        **service_env,
        "PROOFLOOP_PERSISTED_DOCUMENTS": str(manifest),
        "PROOFLOOP_PERSISTED_DOCUMENTS_ONLY": "true",
    }
    with ServerProcess(env, port=free_port()) as proc:
        yield proc


async def apollo_apq(server: ServerProcess, token: str, alias: str, *mode: str) -> dict[str, Any]:
    ran = await asyncio.to_thread(
        subprocess.run,
        ["node", "apollo_apq.mjs", f"{server.url}/graphql", token, alias, *mode],
        cwd=CLIENTS,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    report: dict[str, Any] = json.loads(ran.stdout)
    return report


async def test_apollo_persisted_queries_miss_retry_and_hit(server: ServerProcess, api: ApiClient) -> None:
    token, user = await api.register("apollo-" + uuid.uuid4().hex[:8])
    alias = "name" + uuid.uuid4().hex[:8]  # documents this server has not learned yet
    report = await apollo_apq(server, token, alias)
    me = {"__typename": "User", "id": user["id"], alias: user["email"].split("@")[0]}
    for method in ("POST", "GET"):
        flow = report[method.lower()]
        assert flow["data"] == [{"me": me}] * 2
        # first client: the hash alone misses, the link sends the query with it (as a POST); second: a hit
        assert flow["requests"] == [
            {"method": method, "query": False, "hash": True, "code": "PERSISTED_QUERY_NOT_FOUND"},
            {"method": "POST", "query": True, "hash": True, "code": None},
            {"method": method, "query": False, "hash": True, "code": None},
        ]


async def test_apollo_stops_hashing_where_only_the_manifest_runs(manifest_only_api: ServerProcess) -> None:
    name = "apollo-" + uuid.uuid4().hex[:8]
    body = {
        "documentId": "register-v1",
        "variables": {"e": f"{name}@example.com", "p": "correct horse battery", "n": name},
    }
    async with local_http() as http:
        registered = await http.post(f"{manifest_only_api.url}/graphql", json=body)
    token = registered.json()["data"]["register"]["token"]
    report = await apollo_apq(
        manifest_only_api, token, "n" + hashlib.sha1(name.encode()).hexdigest()[:6], "only"
    )
    assert report["errors"] == ["FORBIDDEN", "FORBIDDEN"]
    # the first answer turns the link's hashing off for good: the second query goes as text at once
    assert report["requests"] == [
        {"method": "POST", "query": False, "hash": True, "code": "PERSISTED_QUERY_NOT_SUPPORTED"},
        {"method": "POST", "query": True, "hash": False, "code": "FORBIDDEN"},
        {"method": "POST", "query": True, "hash": False, "code": "FORBIDDEN"},
    ]
