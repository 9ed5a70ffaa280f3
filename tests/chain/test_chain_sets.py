"""Settling in sets: one transaction settles a batch of due links, and a bad row never blocks the others.

Real worker processes on the run's PostgreSQL and Redis. Rows are brought due by SQL with a live-looking
link, so the message each test sends is their only delivery until the pump finds them overdue.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta
from typing import Any

import asyncpg
import pytest

from harness.chain_support import (
    CREATE,
    create_short_task,
    eventually,
    instances_of,
    settle_events,
    short_schedule,
)
from harness.proofloop import ApiClient, WorkerProcess, row_key
from services.chain.links import FIRE_ACTOR, batched_link_messages
from services.kit.messaging import Outgoing, send
from tests.support.backends import Deployment, both_backends

EVENTS = "query($t: ID) { events(taskId: $t, first: 50) { id type instance { id } } }"


async def _hourly_tasks(api: ApiClient, token: str, count: int) -> list[dict[str, Any]]:
    """Tasks due beyond the horizon (neither the chain nor the pump links them yet)."""
    return [await create_short_task(api, token, start_in=900, every=3600) for _ in range(count)]


async def _due_soon(db: asyncpg.Connection, tasks: list[dict[str, Any]], in_seconds: int = 2) -> list[Any]:
    """Bring the tasks' PENDING instances due at one whole second, with a live-looking link 1."""
    ids = [str((await instances_of(db, t["id"]))[0]["id"]) for t in tasks]
    due = f"date_trunc('second', now()) + interval '{in_seconds} seconds'"
    fire_at = await db.fetchval(
        f"UPDATE task_instances SET fire_at = {due}, due_at = {due}, link_no = 1, linked_at = now(),"
        f" link_for = {due} WHERE id = ANY($1::uuid[]) RETURNING fire_at",
        ids,
    )
    return [(i, 1, fire_at) for i in ids]


async def _status(db: asyncpg.Connection, task: dict[str, Any]) -> str:
    return str((await instances_of(db, task["id"]))[0]["status"])


async def _invariants(api: ApiClient, token: str, db: asyncpg.Connection, task: dict[str, Any]) -> None:
    """One settling event per instance, one PENDING instance if ACTIVE, events positioned and readable."""
    state = await db.fetchval("SELECT state FROM tasks WHERE id = $1", row_key(task["id"]))
    statuses = [r["status"] for r in await instances_of(db, task["id"])]
    assert statuses.count("PENDING") == (1 if state == "ACTIVE" else 0), statuses
    counts = await settle_events(db, task["id"])
    assert set(counts.values()) <= {1}, counts

    settled = {str(r["id"]) for r in await instances_of(db, task["id"]) if r["status"] == "MISSED"}

    async def positioned() -> bool:
        rows = await db.fetch(
            "SELECT position FROM events WHERE instance_id = ANY($1::uuid[])", list(settled)
        )
        return all(r["position"] is not None for r in rows)

    await eventually(positioned, 10, "every settling event given its position")
    feed = (await api.execute(EVENTS, {"t": task["id"]}, token=token))["events"]
    assert settled <= {row_key(e["instance"]["id"]) for e in feed if e["type"] == "MISSED"}


@pytest.mark.usefixtures("broker")
async def test_a_batch_settles_around_a_row_whose_task_another_transaction_holds(
    api: ApiClient, worker: WorkerProcess, db: asyncpg.Connection, database_url: str
) -> None:
    token, _ = await api.register()
    tasks = await _hourly_tasks(api, token, 6)
    held, others = tasks[0], tasks[1:]
    links = await _due_soon(db, tasks)
    holder = await asyncpg.connect(database_url)
    try:
        lock = holder.transaction()
        await lock.start()
        await holder.execute(
            "SELECT 1 FROM tasks WHERE id = $1 FOR UPDATE", row_key(held["id"])
        )  # an edit in progress
        await send(batched_link_messages(links))

        async def others_settled() -> bool:
            return all([await _status(db, t) == "MISSED" for t in others])

        await eventually(others_settled, 20, "the other rows settled while one task is held")
        assert await _status(db, held) == "PENDING"  # skipped, blocking nobody
        await lock.rollback()
    finally:
        await holder.close()

    async def held_settled() -> bool:
        return await _status(db, held) == "MISSED"

    await eventually(held_settled, 20, "the held row settled once released (the pump resends its link)")
    for task in tasks:
        await _invariants(api, token, db, task)
    # one transaction settled the five: they share its clock reading
    assert len({(await instances_of(db, t["id"]))[0]["settled_at"] for t in others}) == 1


@pytest.mark.usefixtures("broker")
async def test_a_row_that_fails_the_set_is_settled_alone_and_the_others_settle(
    api: ApiClient, worker: WorkerProcess, db: asyncpg.Connection
) -> None:
    token, _ = await api.register()
    tasks = await _hourly_tasks(api, token, 5)
    bad, good = tasks[0], tasks[1:]
    # a corrupt counter: planning its next instance collides with its first (task, seq) and raises
    await db.execute("UPDATE tasks SET last_seq = 0 WHERE id = $1", row_key(bad["id"]))
    await send(batched_link_messages(await _due_soon(db, tasks)))

    async def good_settled() -> bool:
        return all([await _status(db, t) == "MISSED" for t in good])

    await eventually(good_settled, 20, "the good rows settled one by one after the set failed")
    assert re.search(r"settling \d+ instances as a set failed", worker.log())
    assert await _status(db, bad) == "PENDING"  # it still owes the work: the pump will resend it
    await db.execute("UPDATE tasks SET last_seq = 1 WHERE id = $1", row_key(bad["id"]))

    async def bad_settled() -> bool:
        return await _status(db, bad) == "MISSED"

    await eventually(bad_settled, 20, "the failing row settled by a resend once it could")
    for task in tasks:
        await _invariants(api, token, db, task)


@pytest.mark.usefixtures("broker")
async def test_stale_rows_in_a_set_are_canceled_without_an_event_or_a_next_instance(
    api: ApiClient, worker: WorkerProcess, db: asyncpg.Connection
) -> None:
    token, _ = await api.register()
    tasks = await _hourly_tasks(api, token, 4)
    deleted, paused, reversioned, live = tasks
    links = await _due_soon(db, tasks)
    # as an edit racing the fire leaves them: the chain moved on without this row
    await db.execute("UPDATE tasks SET deleted_at = now() WHERE id = $1", row_key(deleted["id"]))
    await db.execute("UPDATE tasks SET state = 'PAUSED' WHERE id = $1", row_key(paused["id"]))
    await db.execute(
        "UPDATE tasks SET chain_version = chain_version + 1 WHERE id = $1", row_key(reversioned["id"])
    )
    await send(batched_link_messages(links))

    async def all_settled() -> bool:
        return all([await _status(db, t) != "PENDING" for t in tasks])

    await eventually(all_settled, 20, "every row of the set settled")
    for task in (deleted, paused, reversioned):
        rows = await instances_of(db, task["id"])
        assert [r["status"] for r in rows] == ["CANCELED"]
        assert rows[0]["fire_at"] is None
        assert await settle_events(db, task["id"]) == {}
    assert [r["status"] for r in await instances_of(db, live["id"])] == ["MISSED", "PENDING"]
    await _invariants(api, token, db, live)


@pytest.mark.usefixtures("broker")
async def test_duplicate_links_on_two_workers_settle_each_instance_once(
    api: ApiClient, worker: WorkerProcess, db: asyncpg.Connection, service_env: dict[str, str]
) -> None:
    token, _ = await api.register()
    tasks = [await create_short_task(api, token, start_in=2, every=2) for _ in range(8)]
    sent: set[tuple[str, int]] = set()
    with WorkerProcess(service_env):

        async def duplicate_links_until_settled() -> bool:
            rows = [r for t in tasks for r in await instances_of(db, t["id"])]
            fresh = [
                (str(r["id"]), r["link_no"], r["fire_at"])
                for r in rows
                if r["fire_at"] is not None and r["link_no"] and (str(r["id"]), r["link_no"]) not in sent
            ]
            # each link again, alone and in a batch: three deliveries of each with the chain's own
            await send([Outgoing(FIRE_ACTOR, (i, n), eta=at) for i, n, at in fresh])
            await send(batched_link_messages(fresh))
            sent.update((i, n) for i, n, _ in fresh)
            return [r["status"] for r in rows].count("MISSED") >= 4 * len(tasks)

        await eventually(duplicate_links_until_settled, 40, "four instances of each task MISSED")
    for task in tasks:
        rows = await instances_of(db, task["id"])
        assert len({r["due_at"] for r in rows}) == len(rows)  # one instance per occurrence
        await _invariants(api, token, db, task)


@pytest.mark.usefixtures("broker")
async def test_a_set_plans_reminders_and_leaves_a_due_waiting_change_to_its_own_fire(
    api: ApiClient, worker: WorkerProcess, db: asyncpg.Connection
) -> None:
    token, _ = await api.register()
    tasks = await _hourly_tasks(api, token, 4)
    reminded, changing = tasks[:2], tasks[3]
    for task in reminded:  # "a minute before due", as updateTask stores it
        await db.execute("UPDATE tasks SET reminders = '[[\"DUE\", 60]]' WHERE id = $1", row_key(task["id"]))
    links = await _due_soon(db, tasks)
    # a pause that waited out the commitment horizon and comes due with the deadline: settling the row
    # MISSED under the old rules would be wrong, the pause applies first and cancels it
    await db.execute(
        "UPDATE tasks SET pending_change = '{\"pause\": true}', pending_effective_at = $2 WHERE id = $1",
        row_key(changing["id"]),
        links[0][2],
    )
    await send(batched_link_messages(links))

    async def all_settled() -> bool:
        return all([await _status(db, t) != "PENDING" for t in tasks])

    await eventually(all_settled, 20, "every row settled")
    assert [r["status"] for r in await instances_of(db, changing["id"])] == ["CANCELED"]
    assert await db.fetchval("SELECT state FROM tasks WHERE id = $1", row_key(changing["id"])) == "PAUSED"
    settled = [(await instances_of(db, t["id"]))[0]["settled_at"] for t in tasks[:3]]
    assert len(set(settled)) == 1  # the three others shared one transaction: the set path
    for task in reminded:
        pending = (await instances_of(db, task["id"]))[-1]
        assert pending["status"] == "PENDING"
        reminders = await db.fetch(
            "SELECT remind_at FROM instance_reminders WHERE instance_id = $1", row_key(pending["id"])
        )
        assert [r["remind_at"] for r in reminders] == [pending["due_at"] - timedelta(seconds=60)]
    for task in tasks[:3]:
        await _invariants(api, token, db, task)


QUOTA_GOAL = """mutation($input: CreateTaskInput!) { createTask(input: $input) { id } }"""


@pytest.mark.usefixtures("broker")
async def test_quota_goals_settle_in_a_set_and_plan_their_periods_while_a_partner_goal_goes_alone(
    api: ApiClient, worker: WorkerProcess, db: asyncpg.Connection
) -> None:
    token, _ = await api.register_verified()
    partner_token, partner = await api.register_verified()
    invite = await api.execute(
        "mutation($e: String!) { invitePartner(email: $e) { id } }", {"e": partner["email"]}, token=token
    )
    await api.execute(
        "mutation($id: ID!) { respondToInvite(partnershipId: $id, accept: true) { status } }",
        {"id": invite["invitePartner"]["id"]},
        token=partner_token,
    )
    now = datetime.now(UTC).isoformat()

    async def goal(method: str, zone: str, quota: dict[str, Any]) -> dict[str, Any]:
        schedule = {"startsAt": now, "timezone": zone, "graceSeconds": 0}
        task_input = {"title": "Goal", "method": method, "schedule": schedule, "quota": quota}
        task: dict[str, Any] = (await api.execute(QUOTA_GOAL, {"input": task_input}, token=token))[
            "createTask"
        ]
        return task

    weekly = [await goal("PHOTO", "Europe/Berlin", {"count": 3, "period": "WEEK"}) for _ in range(3)]
    monthly = [await goal("PHOTO", "America/New_York", {"count": 20, "period": "MONTH"}) for _ in range(2)]
    reviewed = await goal("PARTNER", "Europe/Berlin", {"count": 2, "period": "WEEK"})
    tasks = [*weekly, *monthly, reviewed]
    periods = {t["id"]: (await instances_of(db, t["id"]))[0] for t in tasks}
    await send(batched_link_messages(await _due_soon(db, tasks)))  # each period's end brought forward

    async def all_settled() -> bool:
        return all([await _status(db, t) == "MISSED" for t in tasks])

    await eventually(all_settled, 20, "every goal's period MISSED")
    settled = {(await instances_of(db, t["id"]))[0]["settled_at"] for t in [*weekly, *monthly]}
    assert len(settled) == 1  # the five quota goals shared one transaction: the set path
    reviewed_at = (await instances_of(db, reviewed["id"]))[0]["settled_at"]
    assert reviewed_at not in settled  # its waiting reviews are decided by the row path
    for task in tasks:
        _, following = await instances_of(db, task["id"])
        # the next period is the one that runs now, bounded in the task's zone as when it was created
        before = periods[task["id"]]
        assert (following["opens_at"], following["due_at"]) == (before["opens_at"], before["due_at"])
        assert (following["closes_at"], following["proofs_counted"]) == (following["due_at"], 0)
        await _invariants(api, token, db, task)


@both_backends
async def test_tasks_due_together_settle_as_sets(deployment: Deployment) -> None:
    api, worker = deployment.client(), deployment.worker
    log_before = len(worker.log())
    token, _ = await api.register()
    schedule = short_schedule(start_in=2, every=2)  # one schedule: every instance of each due together
    tasks = []
    for n in range(6):
        created = await api.execute(
            CREATE, {"input": {"title": f"s{n}", "method": "PHOTO", "schedule": schedule}}, token=token
        )
        tasks.append(row_key(created["createTask"]["id"]))
    marks = ", ".join(f"${n}" for n in range(1, len(tasks) + 1))

    async def statuses(task_id: str) -> list[str]:
        return [
            r[0]
            for r in await deployment.sql("SELECT status FROM task_instances WHERE task_id = $1", task_id)
        ]

    async def three_rounds() -> bool:
        [(missed,)] = await deployment.sql(
            f"SELECT COUNT(*) FROM task_instances WHERE status = 'MISSED' AND task_id IN ({marks})", *tasks
        )
        return int(missed) >= 3 * len(tasks)

    try:
        await eventually(three_rounds, 40, "three rounds of instances MISSED")
        assert "instances as a set" in worker.log()[log_before:]
        for task_id in tasks:
            assert (await statuses(task_id)).count("PENDING") == 1
    finally:  # the chains stop here: the run's workers go on serving other tests
        for task_id in tasks:
            await api.execute(
                "mutation($id: ID!) { pauseTask(id: $id) { id } }", {"id": task_id}, token=token
            )
    for task_id in tasks:
        per_instance = await deployment.sql(
            "SELECT instance_id, COUNT(*) FROM events WHERE task_id = $1 AND type = 'MISSED' GROUP BY instance_id",
            task_id,
        )
        assert {n for _, n in per_instance} == {1}
        assert len(per_instance) == (await statuses(task_id)).count("MISSED")

    async def positioned() -> bool:
        [(unpositioned,)] = await deployment.sql(
            f"SELECT COUNT(*) FROM events WHERE position IS NULL AND task_id IN ({marks})", *tasks
        )
        return int(unpositioned) == 0

    await eventually(positioned, 10, "every settling event given its position")
    feed = await api.execute("{ events(first: 100) { id type } }", token=token)
    assert len([e for e in feed["events"] if e["type"] == "MISSED"]) >= 3 * len(tasks)
