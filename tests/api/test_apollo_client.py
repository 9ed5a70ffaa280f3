"""Apollo Client's own persisted-queries link (npm @apollo/client) against the live API, POST and GET."""

from __future__ import annotations

import asyncio
import json
import shutil
import subprocess
import uuid

import pytest

from tests.harness import ROOT, ApiClient, ServerProcess

CLIENTS = ROOT / "tests" / "clients"

pytestmark = pytest.mark.skipif(
    shutil.which("node") is None or not (CLIENTS / "node_modules" / "@apollo" / "client").exists(),
    reason="needs Node.js and `npm ci` in tests/clients (make test runs it)",
)


async def test_apollo_persisted_queries_miss_retry_and_hit(server: ServerProcess, api: ApiClient) -> None:
    token, user = await api.register("apollo-" + uuid.uuid4().hex[:8])
    alias = "name" + uuid.uuid4().hex[:8]  # documents this server has not learned yet
    ran = await asyncio.to_thread(
        subprocess.run,
        ["node", "apollo_apq.mjs", f"{server.url}/graphql", token, alias],
        cwd=CLIENTS,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    report = json.loads(ran.stdout)
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
