"""Per-user quotas over the real API, on a server whose quotas are set small."""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
import uuid
from collections.abc import AsyncIterator, Iterator
from contextlib import AsyncExitStack
from typing import Any

import aiohttp
import pytest
import websockets
from websockets.asyncio.client import ClientConnection

from harness.proofloop import ApiClient, GraphQLFailure, ServerProcess, create_open_task, free_port
from tests.support.media_budgets import RSS_BUDGET_MB, api_rss_mb
from tests.support.quotas import CHECK_IN, QUOTAS, acked, open_socket

SUBSCRIBE = "subscription { verificationEvents { id type } }"


@pytest.fixture(scope="module")
def small_quotas(service_env: dict[str, str]) -> Iterator[ServerProcess]:
    with ServerProcess({**service_env, **QUOTAS}, port=free_port()) as proc:
        yield proc


@pytest.fixture
async def quota_api(small_quotas: ServerProcess) -> AsyncIterator[ApiClient]:
    async with ApiClient(small_quotas.url) as client:
        yield client


async def failure_of(api: ApiClient, document: str, variables: dict[str, Any], token: str) -> GraphQLFailure:
    with pytest.raises(GraphQLFailure) as failure:
        await api.execute(document, variables, token=token)
    return failure.value


async def test_tasks_per_user(quota_api: ApiClient) -> None:
    token, _ = await quota_api.register()
    ids = [(await create_open_task(quota_api, token, "PHOTO"))[0] for _ in range(3)]
    create = "mutation($input: CreateTaskInput!) { createTask(input: $input) { id } }"
    value = {"title": "one more", "method": "PHOTO", "schedule": {"startsAt": "2030-01-01T07:00:00+00:00"}}
    failure = await failure_of(quota_api, create, {"input": value}, token)
    assert failure.code == "CONFLICT"
    assert "3 tasks" in failure.message
    # deleting one frees its place; others' quotas are their own
    await quota_api.execute("mutation($id: ID!) { deleteTask(id: $id) }", {"id": ids[0]}, token=token)
    await quota_api.execute(create, {"input": value}, token=token)
    other, _ = await quota_api.register()
    await quota_api.execute(create, {"input": value}, token=other)


async def test_proof_attempts_per_instance(quota_api: ApiClient) -> None:
    token, _ = await quota_api.register()
    _, instance_id = await create_open_task(quota_api, token, "GPS")
    for _ in range(2):  # far outside the geofence: rejected, the instance stays open
        rejected = await quota_api.execute(CHECK_IN, {"i": instance_id}, token=token)
        assert rejected["checkIn"] == {"status": "REJECTED", "reason": "OUTSIDE_GEOFENCE"}
    failure = await failure_of(quota_api, CHECK_IN, {"i": instance_id}, token)
    assert failure.code == "CONFLICT"
    assert "2 proof attempts" in failure.message


async def test_invites_per_day(quota_api: ApiClient) -> None:
    token, _ = await quota_api.register()
    invite = "mutation($e: String!) { invitePartner(email: $e) { id } }"
    for _ in range(3):
        await quota_api.execute(invite, {"e": f"friend-{uuid.uuid4().hex[:8]}@example.com"}, token=token)
    failure = await failure_of(quota_api, invite, {"e": "one-more@example.com"}, token)
    assert failure.code == "RATE_LIMITED"
    assert "3 invites in 24 hours" in failure.message


async def subscribe(socket: ClientConnection, operation_id: str) -> None:
    await socket.send(json.dumps({"id": operation_id, "type": "subscribe", "payload": {"query": SUBSCRIBE}}))


async def test_open_sockets_per_user(small_quotas: ServerProcess, quota_api: ApiClient) -> None:
    token, _ = await quota_api.register()
    async with AsyncExitStack() as stack:
        for _ in range(2):
            socket = await open_socket(small_quotas, token)
            stack.push_async_callback(socket.close)
            await acked(socket)
        refused = await open_socket(small_quotas, token)
        with pytest.raises(websockets.ConnectionClosed) as closed:
            await asyncio.wait_for(refused.recv(), 10)
        assert closed.value.rcvd is not None
        assert closed.value.rcvd.code == 4429
        assert closed.value.rcvd.reason.startswith("RATE_LIMITED")
        other, _ = await quota_api.register()  # another user is not affected
        stranger = await open_socket(small_quotas, other)
        stack.push_async_callback(stranger.close)
        await acked(stranger)
    # closed sockets are no longer counted
    again = await open_socket(small_quotas, token)
    await acked(again)
    await again.close()


async def test_open_subscriptions_per_user(small_quotas: ServerProcess, quota_api: ApiClient) -> None:
    token, _ = await quota_api.register()
    first, second = await open_socket(small_quotas, token), await open_socket(small_quotas, token)
    try:
        await acked(first)
        await acked(second)
        for operation_id in ("a", "b"):
            await subscribe(first, operation_id)
        await subscribe(second, "c")
        await asyncio.sleep(0.5)  # the three are registered before the fourth asks
        await subscribe(second, "d")
        message = json.loads(await asyncio.wait_for(second.recv(), 10))
        assert message["id"] == "d"
        errors = message["payload"] if message["type"] == "error" else message["payload"]["errors"]
        assert errors[0]["extensions"]["code"] == "RATE_LIMITED"
        assert "at most 3 open subscriptions" in errors[0]["message"]
        while message["type"] != "error" and message != {"id": "d", "type": "complete"}:
            message = json.loads(await asyncio.wait_for(second.recv(), 10))
        # completing one frees its place
        await first.send(json.dumps({"id": "a", "type": "complete"}))
        await asyncio.sleep(0.5)
        await subscribe(second, "e")
        with pytest.raises(TimeoutError):  # accepted: it waits quietly for events
            await asyncio.wait_for(second.recv(), 1)
    finally:
        await first.close()
        await second.close()


async def test_a_subscription_over_quota_is_refused_before_it_is_validated(
    small_quotas: ServerProcess, quota_api: ApiClient
) -> None:
    token, _ = await quota_api.register()
    full, other = await open_socket(small_quotas, token), await open_socket(small_quotas, token)
    try:
        await acked(full)
        await acked(other)
        for operation_id in ("a", "b", "c"):
            await subscribe(full, operation_id)
        await asyncio.sleep(0.5)  # the three are registered
        invalid = {"query": "subscription { verificationEvents { nope } }"}
        await other.send(json.dumps({"id": "x", "type": "subscribe", "payload": invalid}))
        refused = json.loads(await asyncio.wait_for(other.recv(), 10))
        # refused by the quota, not by validation: the flood never costs a whole operation each
        assert refused["type"] == "error" and refused["id"] == "x"
        assert refused["payload"][0]["extensions"]["code"] == "RATE_LIMITED"
        assert "at most 3 open subscriptions" in refused["payload"][0]["message"]
        # a query on the same socket is no subscription: it still runs
        await other.send(json.dumps({"id": "q", "type": "subscribe", "payload": {"query": "{ me { id } }"}}))
        answer = json.loads(await asyncio.wait_for(other.recv(), 10))
        assert answer["type"] == "next" and answer["payload"]["data"]["me"]["id"]
    finally:
        await full.close()
        await other.close()


async def test_a_burst_of_subscription_frames_is_counted_from_each_frame(
    small_quotas: ServerProcess, quota_api: ApiClient
) -> None:
    """Frames sent at once are counted as they arrive, not once their subscriptions are registered: past
    the quota they are refused before validation, and an operation that ends gives its place back."""
    token, _ = await quota_api.register()
    socket = await open_socket(small_quotas, token)
    invalid = {"query": "subscription { verificationEvents { nope } }"}
    try:
        await acked(socket)
        await socket.send(json.dumps({"id": "bad", "type": "subscribe", "payload": invalid}))
        failed = json.loads(await asyncio.wait_for(socket.recv(), 10))
        assert failed["payload"][0]["extensions"]["code"] == "GRAPHQL_VALIDATION_FAILED"
        for operation_id in ("a", "b", "c"):  # "bad" gave its place back: three fit
            await subscribe(socket, operation_id)
        for n in range(5):  # no wait: the three above may not be registered yet
            await socket.send(json.dumps({"id": f"x{n}", "type": "subscribe", "payload": invalid}))
        answers = [json.loads(await asyncio.wait_for(socket.recv(), 10)) for _ in range(5)]
        assert [(a["id"], a["type"]) for a in answers] == [(f"x{n}", "error") for n in range(5)]
        assert {a["payload"][0]["extensions"]["code"] for a in answers} == {"RATE_LIMITED"}
        with pytest.raises(TimeoutError):  # the three wait quietly for events
            await asyncio.wait_for(socket.recv(), 1)
    finally:
        await socket.close()
    await asyncio.sleep(0.5)  # the server ends the closed socket's operations
    again = await open_socket(small_quotas, token)
    try:  # the closed socket's three places are free again
        await acked(again)
        for operation_id in ("d", "e", "f"):
            await subscribe(again, operation_id)
        with pytest.raises(TimeoutError):
            await asyncio.wait_for(again.recv(), 1)
    finally:
        await again.close()


async def test_the_legacy_protocol_counts_each_start_frame_too(
    small_quotas: ServerProcess, quota_api: ApiClient
) -> None:
    token, _ = await quota_api.register()
    url = small_quotas.url.replace("http://", "ws://") + "/graphql"
    async with websockets.connect(url, subprotocols=[websockets.Subprotocol("graphql-ws")]) as socket:
        init = {"type": "connection_init", "payload": {"Authorization": f"Bearer {token}"}}
        await socket.send(json.dumps(init))
        assert json.loads(await asyncio.wait_for(socket.recv(), 10))["type"] == "connection_ack"
        for n in range(5):  # at once: none is registered before the last arrives
            await socket.send(json.dumps({"id": f"s{n}", "type": "start", "payload": {"query": SUBSCRIBE}}))
        refused: list[dict[str, Any]] = []
        while len(refused) < 2:
            message = json.loads(await asyncio.wait_for(socket.recv(), 10))
            if message["type"] != "ka":
                refused.append(message)
        assert [(m["id"], m["type"]) for m in refused] == [("s3", "error"), ("s4", "error")]
        assert {m["payload"]["extensions"]["code"] for m in refused} == {"RATE_LIMITED"}


async def test_healthz_answers_while_one_user_attacks(
    small_quotas: ServerProcess, quota_api: ApiClient
) -> None:
    """20 sockets x 100 subscriptions, a costly document and an invite flood at once; /healthz keeps answering
    and the API's memory stays under the budget."""
    token, _ = await quota_api.register()
    stop = asyncio.Event()
    statuses: list[int] = []
    latencies: list[float] = []
    rss_peak = [api_rss_mb(small_quotas)]

    async def poll_healthz() -> None:
        async with aiohttp.ClientSession() as session:
            while not stop.is_set():
                started = time.monotonic()
                async with session.get(f"{small_quotas.url}/healthz") as response:
                    statuses.append(response.status)
                latencies.append(time.monotonic() - started)
                rss_peak.append(api_rss_mb(small_quotas))
                await asyncio.sleep(0.1)

    async def socket_attack(index: int) -> None:
        socket = await open_socket(small_quotas, token)
        with contextlib.suppress(websockets.ConnectionClosed):
            for n in range(100):
                await subscribe(socket, f"{index}-{n}")
            await asyncio.sleep(1)
        await socket.close()

    async def costly_documents() -> None:
        upcoming = " ".join(f"u{i}: upcoming(first: 100)" for i in range(29))
        for _ in range(5):
            with contextlib.suppress(GraphQLFailure, TimeoutError):  # the attack's own fate is not the point
                await quota_api.execute(
                    f"{{ tasks(first: 100) {{ edges {{ node {{ {upcoming} }} }} }} }}", token=token
                )

    async def invite_flood() -> None:
        invite = "mutation($e: String!) { invitePartner(email: $e) { id } }"
        for _ in range(30):
            with contextlib.suppress(GraphQLFailure, TimeoutError):
                await quota_api.execute(invite, {"e": f"x-{uuid.uuid4().hex[:8]}@example.com"}, token=token)

    poller = asyncio.create_task(poll_healthz())
    await asyncio.gather(*(socket_attack(i) for i in range(20)), costly_documents(), invite_flood())
    stop.set()
    await poller
    print(f"/healthz during the attack: {len(statuses)} answers, slowest {max(latencies) * 1000:.0f} ms")
    assert statuses
    assert set(statuses) == {200}
    assert max(rss_peak) < RSS_BUDGET_MB, f"API RSS peaked at {max(rss_peak):.0f} MB"
