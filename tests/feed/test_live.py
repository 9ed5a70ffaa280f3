"""Live events over real websockets: two API processes, a real worker, real Redis and PostgreSQL.

Events come from the chain itself: short-interval tasks that the worker settles MISSED every second.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import pytest
from gql import Client, GraphQLRequest
from gql.transport.exceptions import TransportConnectionFailed, TransportQueryError
from gql.transport.websockets import WebsocketsTransport

from harness.mailbox import Mailbox
from harness.private_services import PrivateRedis
from harness.proofloop import ApiClient, ServerProcess, WorkerProcess, free_port
from tests.support.live import (
    close_code,
    history,
    live_feed,
    make_partners,
    start_missing_task,
    wait_for_history,
    ws_url,
)


@pytest.fixture(scope="module")
def api_a(service_env: dict[str, str]) -> Iterator[ServerProcess]:
    with ServerProcess(service_env, port=free_port()) as proc:
        yield proc


@pytest.fixture(scope="module")
def api_b(service_env: dict[str, str]) -> Iterator[ServerProcess]:
    with ServerProcess(service_env, port=free_port()) as proc:
        yield proc


def ids_of(events: list[dict[str, Any]]) -> list[str]:
    return [e["id"] for e in events]


def distinct(ids: list[str]) -> bool:
    """Event ids are opaque: their order is the stream's (compared against `history`), not their own."""
    return len(set(ids)) == len(ids)


async def test_partner_on_another_process_receives_the_workers_events_in_order(
    api_a: ServerProcess, api_b: ServerProcess, worker: WorkerProcess, mailbox: Mailbox
) -> None:
    async with ApiClient(api_a.url, mailbox) as api:
        owner_token, owner = await api.register()
        partner_token, partner = await api.register()
        stranger_token, _ = await api.register()
        await make_partners(api, owner_token, partner_token, partner["email"])
        async with (
            live_feed(api_b, partner_token, after="0") as partner_feed,
            live_feed(api_b, stranger_token) as stranger_feed,
        ):
            task_id = await start_missing_task(api, owner_token, title="Morning run")
            received = await partner_feed.take(2)
            await api.execute(
                "mutation($id: ID!) { pauseTask(id: $id) { id } }", {"id": task_id}, token=owner_token
            )
            await stranger_feed.stays_quiet(0.2)
        assert distinct(ids_of(received))
        assert {(e["type"], e["instanceStatus"], e["taskTitle"]) for e in received} == {
            ("MISSED", "MISSED", "Morning run")
        }
        assert {(e["user"]["id"], e["task"]["id"]) for e in received} == {(owner["id"], task_id)}
        assert len({e["instance"]["id"] for e in received}) == 2
        # the live stream is the table's history, in the same order
        assert (await history(api, partner_token))[:2] == ids_of(received)


async def test_resuming_after_a_disconnect_yields_exactly_what_was_missed(
    api_a: ServerProcess, api_b: ServerProcess, worker: WorkerProcess
) -> None:
    async with ApiClient(api_a.url) as api:
        token, _ = await api.register()
        task_id = await start_missing_task(api, token)
        async with live_feed(api_b, token) as feed:
            first = await feed.next(within=10)
        # offline while two more occurrences are missed
        missed = await wait_for_history(api, token, count=2, after=first["id"])
        async with live_feed(api_a, token, after=first["id"]) as feed:
            resumed = ids_of(await feed.take(3))
        await api.execute("mutation($id: ID!) { deleteTask(id: $id) }", {"id": task_id}, token=token)
        since_first = await history(api, token, after=first["id"])
    assert resumed[:2] == missed[:2]  # replayed: no gap
    assert since_first[:3] == resumed  # then live, with no duplicate and nothing skipped
    assert distinct([first["id"], *resumed])


async def test_a_connection_without_a_valid_token_is_rejected(api_b: ServerProcess) -> None:
    transport = WebsocketsTransport(
        url=ws_url(api_b),
        subprotocols=[WebsocketsTransport.GRAPHQLWS_SUBPROTOCOL],
        init_payload={"Authorization": "Bearer not-a-token"},
    )
    with pytest.raises(TransportConnectionFailed) as failed:
        async with Client(transport=transport, fetch_schema_from_transport=False):
            pass
    assert close_code(failed.value) == 4403


async def test_subscribing_to_a_user_you_do_not_partner_for_is_not_found(api_b: ServerProcess) -> None:
    async with ApiClient(api_b.url) as api:
        token, _ = await api.register()
        _, other = await api.register()
    async with live_feed(api_b, token, userId=other["id"]) as feed:
        ended = await feed.ending(within=5)
    assert isinstance(ended, TransportQueryError)
    assert ended.errors is not None
    assert ended.errors[0]["extensions"]["code"] == "NOT_FOUND"


async def test_removing_the_partnership_stops_delivery_at_once(
    api_a: ServerProcess, api_b: ServerProcess, worker: WorkerProcess, mailbox: Mailbox
) -> None:
    async with ApiClient(api_a.url, mailbox) as api:
        owner_token, owner = await api.register()
        partner_token, partner = await api.register()
        partnership_id = await make_partners(api, owner_token, partner_token, partner["email"])
        task_id = await start_missing_task(api, owner_token)
        async with (
            live_feed(api_b, partner_token, after="0") as everyone,
            live_feed(api_b, partner_token, userId=owner["id"], after="0") as narrowed,
        ):
            await everyone.next()
            await narrowed.next()
            await api.execute(
                "mutation($id: ID!) { removePartner(partnershipId: $id) }",
                {"id": partnership_id},
                token=owner_token,
            )
            # events fanned out before the removal may still be on their way; nothing after it
            before_removal = await history(api, owner_token)
            cutoff = set(before_removal)
            ended = await narrowed.ending(within=1.0, skipping=cutoff)
            await wait_for_history(api, owner_token, count=len(before_removal) + 1)
            await everyone.stays_quiet(0.5, skipping=cutoff)
        await api.execute("mutation($id: ID!) { deleteTask(id: $id) }", {"id": task_id}, token=owner_token)
    assert isinstance(ended, TransportQueryError)
    assert ended.errors is not None
    assert ended.errors[0]["extensions"]["code"] == "NOT_FOUND"


async def test_logout_closes_the_sockets_opened_with_that_token(
    api_a: ServerProcess, api_b: ServerProcess
) -> None:
    async with ApiClient(api_a.url) as api:
        token, user = await api.register()
        other = (
            await api.execute(
                'mutation($e: String!) { login(email: $e, password: "correct horse battery") { token } }',
                {"e": (await api.execute("query { me { email } }", token=token))["me"]["email"]},
            )
        )["login"]["token"]
        async with live_feed(api_b, token) as revoked, live_feed(api_b, other) as kept:
            await asyncio.sleep(0.3)  # both subscriptions registered
            await api.execute("mutation { logout }", token=token)
            ended = await revoked.ending(within=3)
            await asyncio.sleep(0.5)
            # the socket itself is closed, so its cached session cannot run anything more
            with pytest.raises(TransportConnectionFailed) as closed:
                await revoked.session.execute(GraphQLRequest("query { me { id } }"))
            assert close_code(closed.value) == 4401
            await kept.stays_quiet(0.3)
            assert (await kept.session.execute(GraphQLRequest("query { me { id } }")))["me"]["id"] == user[
                "id"
            ]
    assert isinstance(ended, TransportQueryError)
    assert ended.errors is not None
    assert ended.errors[0]["extensions"]["code"] == "UNAUTHENTICATED"


@pytest.fixture
def private_redis() -> Iterator[PrivateRedis]:
    with PrivateRedis() as server:  # this test's own, which it stops and starts (never the shared one)
        yield server


async def test_a_redis_restart_mid_stream_loses_nothing(
    service_env: dict[str, str], private_redis: PrivateRedis
) -> None:
    env = {**service_env, "PROOFLOOP_REDIS_URL": private_redis.url}
    with ServerProcess(env, port=free_port()) as api_proc, WorkerProcess(env):
        async with ApiClient(api_proc.url) as api:
            token, _ = await api.register()
            task_id = await start_missing_task(api, token)
            async with live_feed(api_proc, token, after="0") as feed:
                received = [await feed.next(within=10)]
                private_redis.stop()
                await asyncio.sleep(2.5)  # at least one occurrence is settled while Redis is gone
                private_redis.start()
                received += await feed.take(3, within=15)
            await api.execute("mutation($id: ID!) { deleteTask(id: $id) }", {"id": task_id}, token=token)
            everything = await history(api, token)
    assert everything[: len(received)] == ids_of(received)
