"""Per-user quotas over the real API, on a server whose quotas are set small (the races and the floods on
both backends: SQLite serializes writers and the embedded Redis counts)."""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
import uuid
from collections.abc import Iterator
from contextlib import AsyncExitStack
from typing import Any

import aiohttp
import pytest
import websockets
from websockets.asyncio.client import ClientConnection

from harness.proofloop import ApiClient, GraphQLFailure, ServerProcess, create_open_task, local_http
from tests.support.backends import Backend, Deployment, both_backends, deployed
from tests.support.media_budgets import RSS_BUDGET_MB, api_rss_mb
from tests.support.quotas import CHECK_IN, QUOTAS, acked, open_socket

SUBSCRIBE = "subscription { verificationEvents { id type } }"
CREATE = "mutation($input: CreateTaskInput!) { createTask(input: $input) { id } }"
LATER = {"title": "one more", "method": "PHOTO", "schedule": {"startsAt": "2030-01-01T07:00:00+00:00"}}
TASK_COUNT = "{ tasks { totalCount } }"


@pytest.fixture(scope="module")
def quotas(request: pytest.FixtureRequest, backend: Backend) -> Iterator[Deployment]:
    with deployed(request, backend, QUOTAS, api_only=True) as running:
        yield running


@pytest.fixture
def small_quotas(quotas: Deployment) -> ServerProcess:
    return quotas.server


@pytest.fixture
def quota_api(quotas: Deployment) -> ApiClient:
    return quotas.client()


async def failure_of(api: ApiClient, document: str, variables: dict[str, Any], token: str) -> GraphQLFailure:
    with pytest.raises(GraphQLFailure) as failure:
        await api.execute(document, variables, token=token)
    return failure.value


async def test_tasks_per_user(quota_api: ApiClient) -> None:
    token, _ = await quota_api.register()
    ids = [(await create_open_task(quota_api, token, "PHOTO"))[0] for _ in range(3)]
    failure = await failure_of(quota_api, CREATE, {"input": LATER}, token)
    assert failure.code == "CONFLICT"
    assert "3 tasks" in failure.message
    # deleting one frees its place; others' quotas are their own
    await quota_api.execute("mutation($id: ID!) { deleteTask(id: $id) }", {"id": ids[0]}, token=token)
    await quota_api.execute(CREATE, {"input": LATER}, token=token)
    other, _ = await quota_api.register()
    await quota_api.execute(CREATE, {"input": LATER}, token=other)


async def test_proof_attempts_per_instance(quota_api: ApiClient) -> None:
    token, _ = await quota_api.register()
    _, instance_id = await create_open_task(quota_api, token, "GPS")
    for _ in range(2):  # far outside the geofence: rejected, the instance stays open
        rejected = await quota_api.execute(CHECK_IN, {"i": instance_id}, token=token)
        assert rejected["checkIn"] == {"status": "REJECTED", "reason": "OUTSIDE_GEOFENCE"}
    failure = await failure_of(quota_api, CHECK_IN, {"i": instance_id}, token)
    assert failure.code == "CONFLICT"
    assert "2 proof attempts" in failure.message


@both_backends
async def test_concurrent_creates_cannot_pass_the_task_quota(quota_api: ApiClient) -> None:
    token, _ = await quota_api.register()

    async def create() -> str:
        try:
            await quota_api.execute(CREATE, {"input": LATER}, token=token)
        except GraphQLFailure as failure:
            return failure.code
        return "OK"

    codes = await asyncio.gather(*(create() for _ in range(8)))
    assert sorted(codes) == ["CONFLICT"] * 5 + ["OK"] * 3
    assert (await quota_api.execute(TASK_COUNT, token=token))["tasks"]["totalCount"] == 3


@both_backends
async def test_sets_of_creates_cannot_pass_the_task_quota(quota_api: ApiClient) -> None:
    """Documents of several createTask fields, done as one set each, counted in order against the quota."""
    token, _ = await quota_api.register()
    fields = " ".join(f"t{n}: createTask(input: $input) {{ id currentInstance {{ id }} }}" for n in range(2))
    document = f"mutation($input: CreateTaskInput!) {{ {fields} }}"

    async def create_set() -> list[str | None]:
        try:
            data = await quota_api.execute(document, {"input": LATER}, token=token)
        except GraphQLFailure as failure:
            assert failure.code == "CONFLICT"
            return [str(failure.errors[0]["path"][0])]
        assert all(data[f"t{n}"]["currentInstance"]["id"] for n in range(2))
        return [None]

    outcomes = await asyncio.gather(*(create_set() for _ in range(3)))
    # 3 sets of 2 against a quota of 3: one set whole, one cut after its first field, one refused at once
    assert sorted(o[0] or "" for o in outcomes) == ["", "t0", "t1"]
    assert (await quota_api.execute(TASK_COUNT, token=token))["tasks"]["totalCount"] == 3


@both_backends
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


@both_backends
async def test_a_subscription_flood_is_refused_before_validation_and_the_accepted_get_each_event(
    small_quotas: ServerProcess, quota_api: ApiClient
) -> None:
    """3 sockets x 20 subscriptions sent at once, then rejected check-ins: the third socket is closed, 3
    subscriptions are accepted and the rest refused before they are validated, each check-in reaches the
    3, and memory stays under the budget."""
    token, _ = await quota_api.register()
    _, instance_id = await create_open_task(quota_api, token, "GPS")
    sockets = [await open_socket(small_quotas, token) for _ in range(3)]
    accepted = []
    for socket in sockets:
        with contextlib.suppress(websockets.ConnectionClosed, AssertionError):
            await acked(socket)
            accepted.append(socket)
    assert len(accepted) == 2
    assert [socket.close_code for socket in sockets if socket not in accepted] == [4429]
    frames: dict[str, list[Any]] = {}

    async def read(socket: ClientConnection) -> None:
        with contextlib.suppress(websockets.ConnectionClosed):
            async for raw in socket:
                message = json.loads(raw)
                frames.setdefault(str(message.get("type")), []).append(message)

    subscribe_all = "subscription { verificationEvents { id type verification { status } } }"
    for index, socket in enumerate(accepted):
        for n in range(20):
            payload = {"query": subscribe_all}
            await socket.send(json.dumps({"id": f"{index}-{n}", "type": "subscribe", "payload": payload}))
    readers = [asyncio.create_task(read(socket)) for socket in accepted]
    peak = api_rss_mb(small_quotas)
    async with local_http(base_url=small_quotas.url, timeout=30) as client:
        while len(frames.get("error", ())) < 37:  # 40 frames, 3 accepted
            assert (await client.get("/healthz")).status_code == 200
            await asyncio.sleep(0.05)
        for _ in range(2):  # the attempt quota is 2: rejected, both stored
            rejected = await quota_api.execute(CHECK_IN, {"i": instance_id}, token=token)
            assert rejected["checkIn"]["status"] == "REJECTED"
        third = await failure_of(quota_api, CHECK_IN, {"i": instance_id}, token)  # refused before judging
        assert third.code == "CONFLICT"
        while len(frames.get("next", ())) < 6:
            assert (await client.get("/healthz")).status_code == 200
            peak = max(peak, api_rss_mb(small_quotas))
            await asyncio.sleep(0.05)
        await asyncio.sleep(0.5)  # room for any push beyond the six
    assert {e["payload"][0]["extensions"]["code"] for e in frames["error"]} == {"RATE_LIMITED"}
    assert len(frames["next"]) == 6  # 2 events x 3 subscriptions, and no more
    assert peak < RSS_BUDGET_MB, f"API RSS peaked at {peak:.0f} MB"
    for reader in readers:
        reader.cancel()
    for socket in accepted:
        await socket.close()
