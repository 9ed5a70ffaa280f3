"""Webhook deliveries against hostile receivers, through the real API on PostgreSQL with real worker
processes and a private Redis: trickling receivers never hold anyone's deadline, and a delivery lost with
its killed worker comes again, with the same delivery id, within the pump's bound."""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import AsyncIterator, Iterator
from typing import Any

import asyncpg
import pytest

from harness.mailbox import Mailbox
from harness.private_services import PrivateRedis
from harness.proofloop import ApiClient, ServerProcess, WorkerProcess, free_port, migrated_database, row_key
from tests.support.reminders import (
    DELETE_WEBHOOK,
    PAUSE,
    REGISTER_WEBHOOK,
    create_task,
    every,
    one_off,
    receiving,
)
from tests.support.webhook_receivers import OpenCount, trickling

AT_OPEN = {"before": "OPENS", "offsetSeconds": 0}
SECOND_BEFORE_DUE = {"before": "DUE", "offsetSeconds": 1}
ATTEMPT_SECONDS = 5  # PROOFLOOP_WEBHOOK_TIMEOUT_SECONDS's default, kept: the deadline a receiver meets
PER_USER = 2  # PROOFLOOP_WEBHOOK_CONCURRENCY_PER_USER's default
PUMP_INTERVAL = 1  # service_env's
OVERDUE = 2  # service_env's PROOFLOOP_LINK_OVERDUE_SECONDS
# a loaded 2-core machine stalls processes for seconds; the starvation this guards against was 81-136 s
SLACK_SECONDS = 10


@pytest.fixture(scope="module")
def private_redis() -> Iterator[PrivateRedis]:
    with PrivateRedis() as redis_server:
        yield redis_server


@pytest.fixture(scope="module")
def env(private_redis: PrivateRedis, service_env: dict[str, str]) -> Iterator[dict[str, str]]:
    with migrated_database("proofloop_webhook_delivery") as url:
        yield {
            **service_env,
            "PROOFLOOP_DATABASE_URL": url,
            "PROOFLOOP_REDIS_URL": private_redis.url,
            "PROOFLOOP_WEBHOOK_ALLOW_INSECURE": "true",
            "PROOFLOOP_WEBHOOK_BACKOFF_SECONDS": "60",  # one attempt per delivery within each test
            # every receiver is on 127.0.0.1: the owners' bound is the one under test
            "PROOFLOOP_WEBHOOK_CONCURRENCY_PER_HOST": "10",
        }


@pytest.fixture(scope="module")
def api_server(env: dict[str, str]) -> Iterator[ServerProcess]:
    with ServerProcess(env, port=free_port()) as proc:
        yield proc


@pytest.fixture
async def api(api_server: ServerProcess, mailbox: Mailbox) -> AsyncIterator[ApiClient]:
    async with ApiClient(api_server.url, mailbox) as client:
        yield client


def worker_env(env: dict[str, str]) -> dict[str, str]:
    return {**env, "PROOFLOOP_WORKER_METRICS_PORT": str(free_port())}


async def query(env: dict[str, str], sql: str, *args: Any) -> list[asyncpg.Record]:
    conn = await asyncpg.connect(env["PROOFLOOP_DATABASE_URL"])
    try:
        return list(await conn.fetch(sql, *args))
    finally:
        await conn.close()


async def wait_until_settled(env: dict[str, str], instance_ids: list[str], within: float) -> None:
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        rows = await query(
            env,
            "SELECT count(*) AS n FROM task_instances WHERE id = ANY($1::uuid[]) AND settled_at IS NULL",
            instance_ids,
        )
        if rows[0]["n"] == 0:
            return
        await asyncio.sleep(0.5)


async def test_trickling_receivers_never_hold_a_bystanders_deadline(
    api: ApiClient, env: dict[str, str]
) -> None:
    counts = [OpenCount(), OpenCount()]
    with (
        trickling(5, counts[0]) as first,
        trickling(5, counts[1]) as second,
        WorkerProcess(worker_env(env)),
    ):
        attackers = []
        for receivers in (first, second):
            token, _ = await api.register()
            hooks = [
                (await api.execute(REGISTER_WEBHOOK, {"url": r.url}, token=token))["registerWebhook"][
                    "webhook"
                ]
                for r in receivers
            ]
            # two reminders every 4 s, each to 5 trickling receivers, for the whole test
            task = await create_task(
                api, token, every(4, window=2, starts_in=3), [AT_OPEN, SECOND_BEFORE_DUE]
            )
            attackers.append((token, task["id"], [h["id"] for h in hooks]))
        bystander, _ = await api.register()
        # due one after another through the attack, each MISSED at its deadline (no grace)
        tasks = [
            await create_task(api, bystander, one_off(window=2, starts_in=8 + 3 * n), [], title=f"Gym {n}")
            for n in range(8)
        ]
        instance_ids = [row_key(t["currentInstance"]["id"]) for t in tasks]
        await wait_until_settled(env, instance_ids, within=90)
        attempts = sum(len(r.deliveries) for r in (*first, *second))
        failed = await query(
            env,
            "SELECT count(*) AS n FROM webhook_deliveries WHERE attempts >= 1 AND last_error LIKE 'no complete%'",
        )
        for token, task_id, hook_ids in attackers:  # the attack ends with this test
            await api.execute(PAUSE, {"id": task_id}, token=token)
            for hook_id in hook_ids:
                await api.execute(DELETE_WEBHOOK, {"id": hook_id}, token=token)

    late = await query(
        env,
        "SELECT status, closes_at, settled_at FROM task_instances WHERE id = ANY($1::uuid[])"
        " AND (settled_at IS NULL OR settled_at > closes_at + make_interval(secs => $2))",
        instance_ids,
        float(PUMP_INTERVAL + OVERDUE + SLACK_SECONDS),
    )
    assert late == [], f"bystander instances settled late (or not at all): {late}"
    assert attempts >= 10, f"only {attempts} deliveries reached the receivers: the attack did not run"
    # one worker process: never more of an owner's attempts at once than its bound (+1: the receiver
    # sees a close a moment after the sender has given the slot back)
    assert max(c.most for c in counts) <= PER_USER + 1
    assert failed[0]["n"] >= 10  # each attempt was cut at its deadline and recorded


async def test_a_delivery_lost_with_its_killed_worker_is_resent_with_the_same_id(
    api: ApiClient, env: dict[str, str]
) -> None:
    token, _ = await api.register()
    with trickling(1) as (receiver,):
        await api.execute(REGISTER_WEBHOOK, {"url": receiver.url}, token=token)
        first_worker = WorkerProcess(worker_env(env))
        with first_worker:
            await create_task(api, token, one_off(window=30, starts_in=33), [AT_OPEN], title="Killed")
            for _ in range(300):  # the reminder fires in about 3 s; its attempt then trickles for 5 s
                if receiver.deliveries:
                    break
                await asyncio.sleep(0.1)
            assert receiver.deliveries, "the first attempt never came"
            first_worker.kill()  # SIGKILL mid-attempt: nothing is recorded, nothing given back
        with WorkerProcess(worker_env(env)):
            for _ in range(600):
                if len(receiver.deliveries) >= 2:
                    break
                await asyncio.sleep(0.1)
    assert len(receiver.deliveries) >= 2, "the lost delivery was never resent"
    (first_at, first_id), (again_at, again_id) = receiver.deliveries[:2]
    assert again_id == first_id and first_id
    # the attempt's hold (its deadline + 1 s), then the pump's overdue bound; not Dramatiq's 60 s heartbeat
    bound = ATTEMPT_SECONDS + 1 + OVERDUE + PUMP_INTERVAL + SLACK_SECONDS
    assert again_at - first_at <= bound
    (row,) = await query(env, "SELECT attempts FROM webhook_deliveries WHERE id = $1::uuid", first_id)
    assert row["attempts"] >= 2


async def test_a_stored_url_that_cannot_be_sent_is_recorded_and_a_non_ascii_path_is_sent(
    api: ApiClient, env: dict[str, str]
) -> None:
    token, _ = await api.register()
    with receiving() as receiver, WorkerProcess(worker_env(env)):
        hooks = {}
        for name, path in (("plain", ""), ("non-ascii", "/tâche/prête?é=ü"), ("control", "/a\x01b")):
            hook = (await api.execute(REGISTER_WEBHOOK, {"url": receiver.url}, token=token))[
                "registerWebhook"
            ]
            hooks[name] = row_key(hook["webhook"]["id"])
            # stored as a registration that let it through would store it
            await query(
                env, "UPDATE webhooks SET url = $1 WHERE id = $2::uuid", receiver.url + path, hooks[name]
            )
        await create_task(api, token, one_off(window=30, starts_in=33), [AT_OPEN], title="Paths")
        for _ in range(300):
            done = await query(
                env,
                "SELECT webhook_id::text AS hook, status, last_error FROM webhook_deliveries"
                " WHERE webhook_id = ANY($1::uuid[]) AND fire_at IS NULL",
                list(hooks.values()),
            )
            if len(done) == len(hooks):
                break
            await asyncio.sleep(0.2)
    outcome = {row["hook"]: (row["status"], row["last_error"] or "") for row in done}
    assert outcome[hooks["plain"]][0] == "DELIVERED"
    assert outcome[hooks["non-ascii"]][0] == "DELIVERED"  # percent-encoded, as a URL's path must be
    status, error = outcome[hooks["control"]]  # refused by the URL rules at delivery, never raised
    assert status == "REFUSED" and "control characters" in error
    assert len(receiver.requests) == 2


async def test_finished_deliveries_are_forgotten_after_30_days(api: ApiClient, env: dict[str, str]) -> None:
    token, _ = await api.register()
    hook = (await api.execute(REGISTER_WEBHOOK, {"url": "http://127.0.0.1:1024/"}, token=token))[
        "registerWebhook"
    ]["webhook"]
    old, recent = str(uuid.uuid4()), str(uuid.uuid4())
    await query(
        env,
        "INSERT INTO webhook_deliveries (id, webhook_id, body, status, attempts, put_offs, link_no,"
        " created_at, finished_at) SELECT d.id, $3::uuid, '{}', 'DELIVERED', 1, 0, 2, d.at, d.at"
        " FROM (VALUES ($1::uuid, now() - interval '31 days'), ($2::uuid, now() - interval '29 days'))"
        " AS d(id, at)",
        old,
        recent,
        row_key(hook["id"]),
    )
    with WorkerProcess(worker_env(env)):
        for _ in range(150):
            kept = await query(
                env, "SELECT id::text AS id FROM webhook_deliveries WHERE id = ANY($1::uuid[])", [old, recent]
            )
            if len(kept) < 2:
                break
            await asyncio.sleep(0.2)
    assert [row["id"] for row in kept] == [recent]
