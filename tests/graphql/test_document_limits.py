"""Hostile documents through the real API, on PostgreSQL and on the embedded default: each is refused with
its contract code and a message naming the limit and its setting, /healthz keeps answering, the API's
memory stays under its budget, and nothing is stored."""

from __future__ import annotations

import asyncio
import json
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import Any, TypeVar

import aiohttp
import pytest

from harness.proofloop import ApiClient, GraphQLFailure, ServerProcess
from tests.support.backends import Deployment, both_backends
from tests.support.media_budgets import RSS_BUDGET_MB, api_rss_mb
from tests.support.quotas import acked, open_socket

T = TypeVar("T")
DISTINCT_DOCUMENTS = 240
REGISTER = """mutation($e: String!) {
  register(email: $e, password: "correct horse battery", displayName: "Bomb") { token ...F0 }
}"""
# under each task: 100 instances x 29 x 100 due times
UPCOMING = " ".join(f"u{i}: upcoming(first: 100)" for i in range(29))
COSTLY_UNDER = f"instances(first: 100) {{ edges {{ node {{ task {{ {UPCOMING} }} }} }} }}"


def fragment_bomb(levels: int = 30, on: str = "User", head: str = "query { nosuchfield { ...F0 } }") -> str:
    """Each fragment spreads the next twice: 2^levels fields once expanded, in about 40 bytes a level."""
    chain = " ".join(f"fragment F{k} on {on} {{ ...F{k + 1} ...F{k + 1} }}" for k in range(levels))
    return f"{head} {chain} fragment F{levels} on {on} {{ id }}"


@pytest.fixture
def target(api_deployment: Deployment) -> ServerProcess:
    return api_deployment.server


@asynccontextmanager
async def healthz_watched(server: ServerProcess) -> AsyncIterator[list[float]]:
    """Polls /healthz (each must answer 200) and the API's RSS (yielded: its samples) while the block runs."""
    rss = [api_rss_mb(server)]
    statuses: list[int] = []
    stop = asyncio.Event()

    async def poll() -> None:
        async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=60)) as session:
            while not stop.is_set():
                async with session.get(f"{server.url}/healthz") as response:
                    statuses.append(response.status)
                rss.append(api_rss_mb(server))
                await asyncio.sleep(0.05)

    poller = asyncio.create_task(poll())
    try:
        yield rss
    finally:
        stop.set()
        await poller
    rss.append(api_rss_mb(server))
    assert statuses and set(statuses) == {200}
    assert max(rss) < RSS_BUDGET_MB, f"API RSS peaked at {max(rss):.0f} MB"


async def post(
    server: ServerProcess, document: str, token: str | None = None, variables: dict[str, Any] | None = None
) -> tuple[int, dict[str, Any]]:
    headers = {"authorization": f"Bearer {token}"} if token else {}
    body = {"query": document, "variables": variables or {}}
    async with (
        aiohttp.ClientSession() as session,
        session.post(f"{server.url}/graphql", json=body, headers=headers) as response,
    ):
        return response.status, json.loads(await response.text())


async def get(server: ServerProcess, document: str, token: str | None = None) -> tuple[int, dict[str, Any]]:
    headers = {"accept": "application/json", **({"authorization": f"Bearer {token}"} if token else {})}
    async with (
        aiohttp.ClientSession() as session,
        session.get(f"{server.url}/graphql", params={"query": document}, headers=headers) as response,
    ):
        return response.status, json.loads(await response.text())


async def over_websocket(server: ServerProcess, token: str, document: str) -> dict[str, Any]:
    """The `error` frame a `subscribe` frame of this document gets (graphql-transport-ws)."""
    socket = await open_socket(server, token)
    try:
        await acked(socket)
        await socket.send(json.dumps({"id": "1", "type": "subscribe", "payload": {"query": document}}))
        frame: dict[str, Any] = json.loads(await asyncio.wait_for(socket.recv(), 60))
    finally:
        await socket.close()
    assert (frame["type"], frame["id"]) == ("error", "1")
    error: dict[str, Any] = frame["payload"][0]
    return error


def refusal(answer: tuple[int, dict[str, Any]], status: int, code: str) -> str:
    got_status, body = answer
    assert (got_status, body["errors"][0]["extensions"]["code"]) == (status, code), body
    message: str = body["errors"][0]["message"]
    return message


async def gathered(calls: list[Callable[[], Awaitable[T]]], at_once: int = 4) -> list[T]:
    gate = asyncio.Semaphore(at_once)

    async def one(call: Callable[[], Awaitable[T]]) -> T:
        async with gate:
            return await call()

    return await asyncio.gather(*(one(call) for call in calls))


@both_backends
async def test_the_fragment_bomb_is_refused_on_every_transport(target: ServerProcess) -> None:
    async with ApiClient(target.url) as api:
        token, _ = await api.register()
    bomb = fragment_bomb(30)  # 2^30 expansions
    email = f"bomb-{uuid.uuid4().hex[:8]}@example.com"
    async with healthz_watched(target):
        anonymous = "over the limit of 500 (PROOFLOOP_ANONYMOUS_MAX_DOCUMENT_FIELDS)"
        assert anonymous in refusal(await post(target, bomb), 200, "GRAPHQL_VALIDATION_FAILED")
        assert anonymous in refusal(await get(target, bomb), 200, "GRAPHQL_VALIDATION_FAILED")
        signed_in = "over the limit of 2000 (PROOFLOOP_MAX_DOCUMENT_FIELDS)"
        assert signed_in in refusal(await post(target, bomb, token), 200, "GRAPHQL_VALIDATION_FAILED")
        subscription = fragment_bomb(30, "VerificationEvent", "subscription { verificationEvents { ...F0 } }")
        error = await over_websocket(target, token, subscription)
        assert error["extensions"]["code"] == "GRAPHQL_VALIDATION_FAILED"
        assert signed_in in error["message"]
        # a mutation carrying the bomb stores nothing: the same address registers afterwards
        mutation = fragment_bomb(30, head=REGISTER.replace("...F0", "user { ...F0 }"))
        answer = await post(target, mutation, variables={"e": email})
        assert "PROOFLOOP_ANONYMOUS_MAX_DOCUMENT_FIELDS" in refusal(answer, 200, "GRAPHQL_VALIDATION_FAILED")
    async with ApiClient(target.url) as api:
        data = await api.execute(REGISTER.replace("...F0", "user { email }"), {"e": email})
    assert data["register"]["user"]["email"] == email


@both_backends
async def test_hundreds_of_distinct_maximum_size_documents(target: ServerProcess) -> None:
    """Half are refused after parsing (~4,800 tokens of aliases each), half pass and are kept: neither
    grows the API's memory past its budget. The document cache holds about ten documents this size (32 MiB
    at 200 bytes a character), so 120 kept ones turn it over a dozen times; the thousand-document form, with
    /healthz latencies, is `python -m bench.abuse_documents`."""
    async with ApiClient(target.url) as api:
        token, _ = await api.register()
    limit = 16 * 1024

    def heavy(n: int) -> str:
        document, j = "{ me {", 0
        while len(document) + 40 < limit:
            document, j = f"{document} a{n}x{j:05}: id", j + 1
        return document + " } }"

    def valid(n: int) -> str:
        head = f"query Padded{n} {{ me {{ id }} }}\n#"
        return head + "x" * (limit - len(head))

    def attack(n: int) -> Callable[[], Awaitable[tuple[int, dict[str, Any]]]]:
        return lambda: post(target, heavy(n) if n % 2 else valid(n), token)

    assert len(heavy(1).encode()) <= limit and len(valid(2).encode()) == limit
    async with healthz_watched(target):
        answers = await gathered([attack(n) for n in range(DISTINCT_DOCUMENTS)])
    for refused in answers[1::2]:
        assert "aliases, over the limit of 30" in refusal(refused, 200, "GRAPHQL_VALIDATION_FAILED")
    assert all(status == 200 and body["data"]["me"]["id"] for status, body in answers[::2])


@both_backends
async def test_a_mebibyte_of_unused_fragments_is_refused_before_it_is_parsed(
    target: ServerProcess,
) -> None:
    async with ApiClient(target.url) as api:
        token, _ = await api.register()
    fragments = " ".join(f"fragment U{n:05} on User {{ id }}" for n in range(33_000))
    document = f"{{ me {{ id }} }} {fragments}"
    assert 1_000_000 < len(document) < 1024 * 1024 - 100  # the body itself is within its 1 MiB cap
    async with healthz_watched(target):
        message = refusal(await post(target, document, token), 413, "PAYLOAD_TOO_LARGE")
        assert "over the limit of 16384 (PROOFLOOP_MAX_DOCUMENT_BYTES)" in message
        message = refusal(await post(target, document), 413, "PAYLOAD_TOO_LARGE")
        assert "over the limit of 4096 (PROOFLOOP_ANONYMOUS_MAX_DOCUMENT_BYTES)" in message


@both_backends
async def test_duplicate_fields_under_an_empty_page(target: ServerProcess) -> None:
    async with ApiClient(target.url) as api:
        token, _ = await api.register()

    def duplicates(n: int) -> str:
        return "{ tasks(first: 0) { edges { node { " + " id" * n + " } } } }"

    async with healthz_watched(target):
        message = refusal(await post(target, duplicates(40_000), token), 413, "PAYLOAD_TOO_LARGE")
        assert "(PROOFLOOP_MAX_DOCUMENT_BYTES)" in message
        message = refusal(await post(target, duplicates(5000), token), 200, "GRAPHQL_VALIDATION_FAILED")
        assert "more than 5000 tokens (PROOFLOOP_MAX_DOCUMENT_TOKENS)" in message
        # as many as the size and tokens let through: counted, refused before the spec's rules compare them
        message = refusal(await post(target, duplicates(1900), token), 200, "GRAPHQL_VALIDATION_FAILED")
        assert "`id` selected 1900 times in one selection set, over the limit of 20" in message
        message = refusal(await post(target, duplicates(2100), token), 200, "GRAPHQL_VALIDATION_FAILED")
        assert "selects 2103 fields" in message and "(PROOFLOOP_MAX_DOCUMENT_FIELDS)" in message


@pytest.mark.parametrize("size", ["0", "-5"])
@both_backends
async def test_an_empty_or_negative_page_still_prices_what_is_under_it(
    target: ServerProcess, size: str
) -> None:
    async with ApiClient(target.url) as api:
        token, _ = await api.register()
        document = f"{{ tasks(first: {size}) {{ edges {{ node {{ {COSTLY_UNDER} }} }} }} }}"
        with pytest.raises(GraphQLFailure) as failure:
            await api.execute(document, token=token)
    assert failure.value.code == "GRAPHQL_VALIDATION_FAILED"
    assert "exceeds the budget of 20000" in failure.value.message


@both_backends
async def test_ordinary_and_introspection_documents_still_run_anonymously(target: ServerProcess) -> None:
    from graphql import get_introspection_query

    introspection = get_introspection_query(descriptions=True, specified_by_url=True)
    status, body = await post(target, introspection)
    assert status == 200 and "errors" not in body and body["data"]["__schema"]["queryType"]
