"""The per-task chain with a real Dramatiq worker on real Redis and PostgreSQL."""

from __future__ import annotations

from datetime import datetime, timedelta

import asyncpg
import dramatiq

from actors.broker import configure_broker
from harness.chain_support import create_short_task, eventually, instances_of, settle_events
from harness.proofloop import ApiClient, WorkerProcess
from services.chain.links import FIRE_ACTOR, FIRE_BATCH_ACTOR, batched_link_messages
from services.kit.messaging import Outgoing, send


async def test_two_second_chain_settles_instances_in_order(
    api: ApiClient, worker: WorkerProcess, db: asyncpg.Connection
) -> None:
    token, _ = await api.register()
    task = await create_short_task(api, token, start_in=1, every=2)

    async def four_missed() -> bool:
        return [r["status"] for r in await instances_of(db, task["id"])].count("MISSED") >= 4

    await eventually(four_missed, 25, "four instances MISSED")
    rows = await instances_of(db, task["id"])
    first_due: datetime = rows[0]["due_at"]
    for index, row in enumerate(rows):
        assert row["seq"] == index + 1
        assert row["due_at"] == first_due + timedelta(seconds=2 * index)
    settled = [r for r in rows if r["status"] == "MISSED"]
    for row in settled:
        assert row["settled_at"] >= row["due_at"]  # never before its deadline
        assert row["fire_at"] is None
    assert [r["status"] for r in rows].count("PENDING") == 1
    assert rows[-1]["status"] == "PENDING"
    assert set((await settle_events(db, task["id"])).values()) == {1}


async def test_every_link_delivered_twice_settles_each_instance_once(
    api: ApiClient, worker: WorkerProcess, db: asyncpg.Connection, redis_url: str
) -> None:
    configure_broker(redis_url)
    token, _ = await api.register()
    task = await create_short_task(api, token, start_in=2, every=2)
    duplicated: set[tuple[str, int]] = set()

    async def duplicate_links_until_five_settled() -> bool:
        rows = await instances_of(db, task["id"])
        fresh = [
            (str(r["id"]), r["link_no"], r["fire_at"])
            for r in rows
            if r["fire_at"] is not None and r["link_no"] and (str(r["id"]), r["link_no"]) not in duplicated
        ]
        await send([Outgoing(FIRE_ACTOR, (i, n), eta=at) for i, n, at in fresh])
        duplicated.update((i, n) for i, n, _ in fresh)
        return [r["status"] for r in rows].count("MISSED") >= 5

    await eventually(duplicate_links_until_five_settled, 30, "five instances MISSED")
    assert len(duplicated) >= 5
    rows = await instances_of(db, task["id"])
    assert [r["status"] for r in rows].count("PENDING") == 1
    assert len({r["due_at"] for r in rows}) == len(rows)  # one instance per occurrence
    assert set((await settle_events(db, task["id"])).values()) == {1}
    dramatiq.get_broker().close()


async def test_an_early_link_is_replaced_by_one_for_the_remainder(
    api: ApiClient, worker: WorkerProcess, db: asyncpg.Connection, redis_url: str
) -> None:
    configure_broker(redis_url)
    token, _ = await api.register()
    task = await create_short_task(api, token, start_in=8, every=30)
    row = (await instances_of(db, task["id"]))[0]
    await send([Outgoing(FIRE_ACTOR, (str(row["id"]), row["link_no"]))])  # delivered at once: early

    async def relinked() -> bool:
        return bool((await instances_of(db, task["id"]))[0]["link_no"] == row["link_no"] + 1)

    await eventually(relinked, 10, "the early link resent with the next link number")
    assert (await instances_of(db, task["id"]))[0]["status"] == "PENDING"

    async def settled() -> bool:
        return bool((await instances_of(db, task["id"]))[0]["status"] == "MISSED")

    await eventually(settled, 20, "the instance settled at its deadline")
    assert set((await settle_events(db, task["id"])).values()) == {1}
    dramatiq.get_broker().close()


async def test_links_due_together_travel_in_one_batch_and_settle_independently(
    api: ApiClient, worker: WorkerProcess, db: asyncpg.Connection, redis_url: str
) -> None:
    configure_broker(redis_url)
    token, _ = await api.register()
    # due beyond the horizon: neither the chain nor the pump links them...
    tasks = [await create_short_task(api, token, start_in=900, every=3600) for _ in range(3)]
    ids = [str((await instances_of(db, t["id"]))[0]["id"]) for t in tasks]
    # ...then brought due in 2 s with a link sent "in an hour": the pump never judges it lost, however late a
    # loaded machine runs the worker, so the batch below is their only delivery
    fire_at = await db.fetchval(
        "UPDATE task_instances SET fire_at = date_trunc('second', now()) + interval '2 seconds',"
        " due_at = date_trunc('second', now()) + interval '2 seconds', link_no = 1,"
        " linked_at = now() + interval '1 hour',"
        " link_for = date_trunc('second', now()) + interval '2 seconds' WHERE id = ANY($1::uuid[]) RETURNING fire_at",
        ids,
    )
    links = [(i, 1, fire_at) for i in ids]
    links.append(("00000000-0000-4000-8000-000000000000", 1, fire_at))  # names no instance: harms no other
    messages = batched_link_messages(links)
    assert [m.actor_name for m in messages] == [FIRE_BATCH_ACTOR]
    await send(messages)

    async def all_settled() -> bool:
        return all([(await instances_of(db, t["id"]))[0]["status"] == "MISSED" for t in tasks])

    await eventually(all_settled, 20, "every instance of the batch settled")
    for task in tasks:
        first = (await instances_of(db, task["id"]))[0]
        assert first["link_no"] == 1  # settled by the batch itself, not by a pump resend
        assert set((await settle_events(db, task["id"])).values()) == {1}
    dramatiq.get_broker().close()
