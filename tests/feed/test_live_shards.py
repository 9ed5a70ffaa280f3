"""A live tier that shards: each API process takes only the notices and rows of the users its viewers watch.

Two API processes on one database and Redis, a viewer on each; the processes' own counters on /metrics
and Redis's PUBSUB NUMSUB show who received what. Resume, removal and acceptance mid-subscription keep
working when the watched users change under an open subscription.
"""

from __future__ import annotations

import asyncio
import json
import time
import urllib.request
from collections.abc import Iterator

import pytest
import redis
from websockets.asyncio.client import connect
from websockets.typing import Subprotocol

from harness.mailbox import Mailbox
from harness.proofloop import ApiClient, ServerProcess, WorkerProcess, free_port, row_key
from realtime.notices import events_channel
from tests.support.live import (
    history,
    live_feed,
    make_partners,
    start_missing_task,
    wait_for_history,
    ws_url,
)

COUNTERS = ("proofloop_live_notices_total", "proofloop_live_event_rows_read_total")
# short enough to see a released channel go, long enough to outlive a test's own reconnects
LINGER_SECONDS = 1
SHARDED = {
    "PROOFLOOP_LIVE_CHANNEL_LINGER_SECONDS": str(LINGER_SECONDS),
    # an acceptance must reach open subscriptions by its notice, not by the periodic re-read
    "PROOFLOOP_LIVE_WATCH_REFRESH_SECONDS": "3600",
}


def counters(server: ServerProcess) -> dict[str, float]:
    with urllib.request.urlopen(f"{server.url}/metrics", timeout=5) as response:
        lines = response.read().decode().splitlines()
    values = {name: 0.0 for name in COUNTERS}
    for line in lines:
        name, _, value = line.partition(" ")
        if name in values:
            values[name] = float(value)
    return values


def grown(before: dict[str, float], after: dict[str, float]) -> dict[str, float]:
    return {name: after[name] - before[name] for name in COUNTERS}


def subscribers_of(redis_url: str, user_id: str) -> int:
    """How many pub/sub connections (over every API process) hold the channel of the user `user_id` names."""
    [(_, count)] = redis.Redis.from_url(redis_url).pubsub_numsub(events_channel(row_key(user_id)))
    return int(count)


async def until(condition: object, within: float = 10) -> None:
    deadline = time.monotonic() + within
    while not callable(condition) or not condition():
        if time.monotonic() > deadline:
            raise AssertionError("not within the time allowed")
        await asyncio.sleep(0.1)


@pytest.fixture(scope="module")
def shard_a(service_env: dict[str, str]) -> Iterator[ServerProcess]:
    with ServerProcess({**service_env, **SHARDED}, port=free_port()) as proc:
        yield proc


@pytest.fixture(scope="module")
def shard_b(service_env: dict[str, str]) -> Iterator[ServerProcess]:
    with ServerProcess({**service_env, **SHARDED}, port=free_port()) as proc:
        yield proc


async def test_a_users_events_reach_only_the_process_whose_viewer_watches_them(
    shard_a: ServerProcess,
    shard_b: ServerProcess,
    service_env: dict[str, str],
    worker: WorkerProcess,
    mailbox: Mailbox,
) -> None:
    redis_url = service_env["PROOFLOOP_REDIS_URL"]
    with ServerProcess({**service_env, "PROOFLOOP_LIVE_NOTICES": "all"}, port=free_port()) as everything:
        async with ApiClient(shard_a.url, mailbox) as api:
            owner_token, owner = await api.register()
            partner_token, partner = await api.register()
            stranger_token, _ = await api.register()
            await make_partners(api, owner_token, partner_token, partner["email"])
            async with (
                live_feed(shard_a, partner_token) as partner_feed,
                live_feed(shard_b, stranger_token) as stranger_feed,
                live_feed(everything, stranger_token) as unsharded_feed,
            ):
                await until(lambda: subscribers_of(redis_url, owner["id"]) == 1)
                await asyncio.sleep(0.5)  # the subscriptions' own start-up reads are done
                before = {server.url: counters(server) for server in (shard_a, shard_b, everything)}
                task_id = await start_missing_task(api, owner_token)
                received = await partner_feed.take(3)
                await asyncio.sleep(0.5)  # notices of the last event reach every process
                after = {server.url: counters(server) for server in (shard_a, shard_b, everything)}
                await api.execute(
                    "mutation($id: ID!) { deleteTask(id: $id) }", {"id": task_id}, token=owner_token
                )
                await stranger_feed.stays_quiet(0.2)
                await unsharded_feed.stays_quiet(0.2)
    watching = grown(before[shard_a.url], after[shard_a.url])
    elsewhere = grown(before[shard_b.url], after[shard_b.url])
    unsharded = grown(before[everything.url], after[everything.url])
    assert len(received) == 3
    assert watching["proofloop_live_notices_total"] >= 3
    assert watching["proofloop_live_event_rows_read_total"] >= 3
    # the process whose viewer does not watch the owner takes none of it: no notice, no row
    assert elsewhere == {name: 0.0 for name in COUNTERS}
    # the pre-sharding setting still receives every notice and reads every row
    assert unsharded["proofloop_live_notices_total"] >= 3
    assert unsharded["proofloop_live_event_rows_read_total"] >= 3


async def test_resuming_on_another_process_after_a_gap_replays_what_was_missed(
    shard_a: ServerProcess, shard_b: ServerProcess, worker: WorkerProcess
) -> None:
    async with ApiClient(shard_a.url) as api:
        token, _ = await api.register()
        task_id = await start_missing_task(api, token)
        async with live_feed(shard_a, token) as feed:
            first = await feed.next(within=10)
        missed = await wait_for_history(api, token, count=2, after=first["id"])
        # shard_b watches nobody of this user's: the subscription makes it start
        async with live_feed(shard_b, token, after=first["id"]) as feed:
            resumed = [event["id"] for event in await feed.take(4)]
        await api.execute("mutation($id: ID!) { deleteTask(id: $id) }", {"id": task_id}, token=token)
        since_first = await history(api, token, after=first["id"])
    assert resumed[:2] == missed[:2]  # replayed: no gap
    assert since_first[:4] == resumed  # then live, with no duplicate and nothing skipped


async def test_a_partner_removed_mid_subscription_stops_at_once_and_the_channel_is_released(
    shard_a: ServerProcess, shard_b: ServerProcess, service_env: dict[str, str], worker: WorkerProcess,
    mailbox: Mailbox,
) -> None:  # fmt: skip
    redis_url = service_env["PROOFLOOP_REDIS_URL"]
    async with ApiClient(shard_a.url, mailbox) as api:
        owner_token, owner = await api.register()
        partner_token, partner = await api.register()
        partnership_id = await make_partners(api, owner_token, partner_token, partner["email"])
        task_id = await start_missing_task(api, owner_token)
        async with (
            live_feed(shard_b, partner_token) as everyone,
            live_feed(shard_b, partner_token, userId=owner["id"]) as narrowed,
        ):
            await everyone.next()
            await narrowed.next()
            assert subscribers_of(redis_url, owner["id"]) == 1
            await api.execute(
                "mutation($id: ID!) { removePartner(partnershipId: $id) }",
                {"id": partnership_id},
                token=owner_token,
            )
            cutoff = set(await history(api, owner_token))
            ended = await narrowed.ending(within=1.0, skipping=cutoff)
            await wait_for_history(api, owner_token, count=len(cutoff) + 1)
            await everyone.stays_quiet(0.5, skipping=cutoff)
            # nobody on shard_b watches the owner any more: their channel goes after the linger
            await until(lambda: subscribers_of(redis_url, owner["id"]) == 0, within=LINGER_SECONDS + 5)
        await api.execute("mutation($id: ID!) { deleteTask(id: $id) }", {"id": task_id}, token=owner_token)
    assert ended is not None
    assert getattr(ended, "errors", [{}])[0]["extensions"]["code"] == "NOT_FOUND"


async def test_a_partnership_accepted_while_subscribed_starts_delivering(
    shard_a: ServerProcess, shard_b: ServerProcess, service_env: dict[str, str], worker: WorkerProcess,
    mailbox: Mailbox,
) -> None:  # fmt: skip
    redis_url = service_env["PROOFLOOP_REDIS_URL"]
    async with ApiClient(shard_a.url, mailbox) as api:
        owner_token, owner = await api.register()
        partner_token, partner = await api.register()
        task_id = await start_missing_task(api, owner_token)
        async with live_feed(shard_b, partner_token) as feed:
            await asyncio.sleep(0.5)
            assert subscribers_of(redis_url, owner["id"]) == 0
            await make_partners(api, owner_token, partner_token, partner["email"])
            received = await feed.take(2, within=10)
            assert subscribers_of(redis_url, owner["id"]) == 1
        seen_by_partner = await history(api, partner_token)  # a deleted task's events leave partners' feeds
        await api.execute("mutation($id: ID!) { deleteTask(id: $id) }", {"id": task_id}, token=owner_token)
    assert {event["user"]["id"] for event in received} == {owner["id"]}
    assert [event["id"] for event in received] == seen_by_partner[:2]


async def test_opening_and_closing_subscriptions_in_a_loop_costs_redis_one_subscribe_per_user(
    service_env: dict[str, str], mailbox: Mailbox
) -> None:
    """Subscribe churn as a denial of service: the channel linger (30 s by default) keeps each watched
    user's channel, so 30 open/close cycles cost one SUBSCRIBE of two channels, and no UNSUBSCRIBE."""
    with ServerProcess(service_env, port=free_port()) as server:
        async with ApiClient(server.url, mailbox) as api:
            owner_token, _ = await api.register()
            churner_token, churner = await api.register()
            await make_partners(api, owner_token, churner_token, churner["email"])
        before = channel_changes(server)
        async with connect(ws_url(server), subprotocols=[Subprotocol("graphql-transport-ws")]) as ws:
            init = {"type": "connection_init", "payload": {"Authorization": f"Bearer {churner_token}"}}
            await ws.send(json.dumps(init))
            assert json.loads(await ws.recv())["type"] == "connection_ack"
            for n in range(1, 31):
                frame = {
                    "id": str(n),
                    "type": "subscribe",
                    "payload": {"query": "subscription { verificationEvents { id } }"},
                }
                await ws.send(json.dumps(frame))
                await asyncio.sleep(0.05)  # registered with the hub before it is closed
                await ws.send(json.dumps({"id": str(n), "type": "complete"}))
        await asyncio.sleep(0.5)
        after = channel_changes(server)
        assert await asyncio.to_thread(healthz_status, server) == 200
    assert after["subscribe"] - before["subscribe"] == 2  # the churner's own channel and the owner's
    assert after["unsubscribe"] - before["unsubscribe"] == 0


def channel_changes(server: ServerProcess) -> dict[str, float]:
    with urllib.request.urlopen(f"{server.url}/metrics", timeout=5) as response:
        lines = response.read().decode().splitlines()
    changes = {"subscribe": 0.0, "unsubscribe": 0.0}
    for command in changes:
        prefix = f'proofloop_live_channel_changes_total{{command="{command}"}} '
        changes[command] = sum(float(line.removeprefix(prefix)) for line in lines if line.startswith(prefix))
    return changes


def healthz_status(server: ServerProcess) -> int:
    with urllib.request.urlopen(f"{server.url}/healthz", timeout=5) as response:
        return int(response.status)
