"""The clients frontends are written with, run from Node against the live API: Apollo Client, urql with
graphcache, and relay-runtime. Each signs in, pages through its tasks, refetches one, submits photos as
uploads, receives the live event over a subscription and resumes after reconnecting; the tests check what
each library saw against the server's own history."""

from __future__ import annotations

import asyncio
import json
import shutil
import zlib
from pathlib import Path
from typing import Any

import pytest

from harness import media_factory
from harness.proofloop import ROOT, ApiClient, ServerProcess, WorkerProcess

CLIENTS = ROOT / "tests" / "clients"
TASKS = 5
PAGE = 2
PAGING_ARGUMENTS = '{ __type(name: "Query") { fields { name args { name } } } }'
HISTORY = '{ events(after: "0", first: 100) { id type verification { id } } }'

pytestmark = pytest.mark.skipif(
    shutil.which("node") is None, reason="needs Node.js (make test installs the clients)"
)


async def node(*args: str) -> tuple[int, str, str]:
    """Runs a Node script in tests/clients: (exit code, stdout, stderr)."""
    process = await asyncio.create_subprocess_exec(
        "node", *args, cwd=CLIENTS, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE
    )
    try:
        out, err = await asyncio.wait_for(process.communicate(), timeout=120)
    except TimeoutError:
        process.kill()
        raise
    assert process.returncode is not None
    return process.returncode, out.decode(), err.decode()


async def run_flow(script: str, server: ServerProcess, photos: list[Path], **options: Any) -> dict[str, Any]:
    """One client's flow against the server: what it saw, as the script's JSON report."""
    assert (CLIENTS / "node_modules" / "relay-runtime").exists(), (
        "needs `make tests/clients/node_modules/.package-lock.json`"
    )
    settings = {"photos": [str(p) for p in photos], "tasks": TASKS, **options}
    code, out, err = await node(script, f"{server.url}/graphql", json.dumps(settings))
    assert code == 0, err
    result: dict[str, Any] = json.loads(out)
    return result


@pytest.fixture
def photos(tmp_path: Path, request: pytest.FixtureRequest) -> list[Path]:
    """Two distinct photos, distinct per test too: perceptual reuse is checked across proofs."""
    seed = zlib.crc32(request.node.name.encode())
    paths = [tmp_path / f"proof-{i}.jpg" for i in range(2)]
    for i, path in enumerate(paths):
        path.write_bytes(media_factory.photo(seed + i))
    return paths


def proof_event(events: list[dict[str, Any]], verification_id: str) -> dict[str, Any]:
    return next(
        e
        for e in events
        if e["type"] == "PROOF_SUBMITTED" and (e["verification"] or {}).get("id") == verification_id
    )


async def check_flow(server: ServerProcess, result: dict[str, Any]) -> None:
    newest_first = list(reversed(result["created"]))
    assert result["pages"] == [newest_first[i : i + PAGE] for i in range(0, TASKS, PAGE)]
    assert result["merged"] == newest_first  # the library's cache joined the pages
    refetched = result["refetched"]  # by node(id:), with the global id createTask gave
    assert (refetched["id"], refetched["title"][-2:], refetched["state"]) == (
        result["created"][1],
        " 1",
        "ACTIVE",
    )
    first, second = result["proofs"]
    assert first["status"] == second["status"] == "ACCEPTED"

    live, resumed = result["liveEvents"], result["resumed"]
    assert proof_event(live, first["id"])["task"]["id"] == result["created"][0]
    assert proof_event(resumed, second["id"])["task"]["id"] == result["created"][1]
    assert result["resumedAfter"] == live[-1]["id"]
    assert result["connections"] >= 2  # the resume was a new connection

    async with ApiClient(server.url) as api:
        history = (await api.execute(HISTORY, token=result["token"]))["events"]
    seen = [e["id"] for e in live + resumed]
    assert seen == [e["id"] for e in history][: len(seen)]  # replayed without a gap, nothing twice


async def pages_backward(server: ServerProcess) -> bool:
    """Whether tasks() takes last/before: the flows page backward too where it does."""
    async with ApiClient(server.url) as api:
        fields = (await api.execute(PAGING_ARGUMENTS))["__type"]["fields"]
    tasks = next(f for f in fields if f["name"] == "tasks")
    return {"last", "before"} <= {a["name"] for a in tasks["args"]}


def check_backward(result: dict[str, Any]) -> None:
    newest_first = list(reversed(result["created"]))
    ends = range(TASKS, 0, -PAGE)
    assert result["backward"]["pages"] == [newest_first[max(0, end - PAGE) : end] for end in ends]
    assert result["backward"]["merged"] == newest_first


def assert_same_start(over_http: list[dict[str, Any]], live: list[dict[str, Any]]) -> None:
    """The HTTP subscription, replayed from the start, begins with the events the websocket saw live."""
    assert [e["id"] for e in over_http][: len(live)] == [e["id"] for e in live]


def assert_persisted_queries_hit(requests: dict[str, int]) -> None:
    """A hash the server did not know was sent again with its text; later ones ran from the hash alone
    (a document another client already sent, printed the same, is known from the start)."""
    assert requests["misses"] == requests["hashWithQuery"], requests
    assert requests["hashOnly"] - requests["misses"] >= 4  # createTask again and again: hits
    assert requests["plain"] == 0


async def test_apollo_client(server: ServerProcess, worker: WorkerProcess, photos: list[Path]) -> None:
    backward = await pages_backward(server)
    result = await run_flow("apollo_flow.mjs", server, photos, apq=True, backward=backward)
    await check_flow(server, result)
    if backward:
        check_backward(result)
    assert_same_start(result["overHttp"], result["liveEvents"])
    assert result["requests"]["multipart"] >= 2  # the photos went as GraphQL multipart requests
    assert_persisted_queries_hit(result["requests"])


async def test_urql_with_graphcache(server: ServerProcess, worker: WorkerProcess, photos: list[Path]) -> None:
    backward = await pages_backward(server)
    result = await run_flow("urql_flow.mjs", server, photos, apq=True, backward=backward)
    await check_flow(server, result)
    if backward:
        check_backward(result)
    assert_same_start(result["overHttp"], result["liveEvents"])
    assert result["requests"]["multipart"] >= 2
    assert_persisted_queries_hit(result["requests"])


async def test_relay_runtime(server: ServerProcess, worker: WorkerProcess, photos: list[Path]) -> None:
    # the committed artifacts must be what relay-compiler makes of the documents and today's schema
    code, out, err = await node("node_modules/relay-compiler/cli.js", "--validate")
    assert code == 0, out + err
    backward = await pages_backward(server)
    result = await run_flow("relay_flow.mjs", server, photos, backward=backward)
    await check_flow(server, result)
    assert result["connection"] == result["merged"]  # ConnectionHandler's edges, as the query reads them
    if backward:
        check_backward(result)
        assert result["backward"]["connection"] == result["backward"]["merged"]
