"""Reminders fired as sets on the embedded default (SQLite + BEGIN IMMEDIATE), real API and worker.

Reminder rows are written due by SQL with a live-looking link, so the batch message each test sends is
their only delivery until the pump finds them overdue.
"""

from __future__ import annotations

import asyncio
import re
import sqlite3
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

import dramatiq
import pytest

from actors.broker import configure_broker
from harness.chain_support import CREATE, eventually, short_schedule
from harness.private_services import PrivateRedis
from harness.proofloop import ApiClient, ServerProcess, WorkerProcess, free_port, migrated_sqlite, row_key
from services.kit.messaging import send
from services.reminders.reminders import reminder_messages


@dataclass
class Embedded:
    url: str
    database: Path
    worker: WorkerProcess


@pytest.fixture(scope="module")
def embedded(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Embedded]:
    data_dir: Path = tmp_path_factory.mktemp("embedded-reminder-sets")
    with PrivateRedis() as redis_server:  # its own: no other run's worker takes these links
        env = {
            "PROOFLOOP_DATA_DIR": str(data_dir),
            "PROOFLOOP_REDIS_URL": redis_server.url,
            "PROOFLOOP_SECRET_KEY": "k",
            "PROOFLOOP_MIN_INTERVAL_SECONDS": "1",
            "PROOFLOOP_PUMP_INTERVAL_SECONDS": "1",
            "PROOFLOOP_LINK_OVERDUE_SECONDS": "2",
            "PROOFLOOP_WORKER_METRICS_PORT": "0",
        }
        database = migrated_sqlite(data_dir)  # no PROOFLOOP_DATABASE_URL: the SQLite file under the data dir
        configure_broker(redis_server.url)
        try:
            with ServerProcess(env, port=free_port()) as server, WorkerProcess(env) as worker:
                yield Embedded(server.url, database, worker)
        finally:
            dramatiq.get_broker().close()


def _rows(database: Path, sql: str, *args: object) -> list[tuple[object, ...]]:
    with sqlite3.connect(database, timeout=10) as db:
        return list(db.execute(sql, args))


async def _herd(embedded: Embedded, count: int) -> tuple[list[str], list[tuple[str, int, datetime]]]:
    """`count` tasks due beyond the horizon, each open instance given one reminder due at one whole second
    two seconds from now, linked; (task ids, links)."""
    async with ApiClient(embedded.url) as api:
        token, _ = await api.register()
        tasks = [
            (
                await api.execute(
                    CREATE,
                    {"input": {"title": f"r{n}", "method": "PHOTO", "schedule": short_schedule(900, 3600)}},
                    token=token,
                )
            )["createTask"]
            for n in range(count)
        ]
    due = (datetime.now(UTC) + timedelta(seconds=2)).replace(microsecond=0)
    links = []
    with sqlite3.connect(embedded.database, timeout=10) as db:
        for task in tasks:
            reminder_id = str(uuid.uuid4())
            db.execute(
                "INSERT INTO instance_reminders (id, instance_id, anchor, offset_seconds, remind_at, fire_at,"
                " link_no, link_for, linked_at) VALUES (?, ?, 'DUE', 900, ?, ?, 1, ?, ?)",
                (
                    reminder_id,
                    row_key(task["currentInstance"]["id"]),
                    *[_stored(at) for at in (due, due, due, datetime.now(UTC))],
                ),
            )
            links.append((reminder_id, 1, due))
    return [row_key(t["id"]) for t in tasks], links


def _stored(at: datetime) -> str:
    return at.isoformat(" ")  # as Tortoise writes a datetime to SQLite


def _state(embedded: Embedded, reminder_id: str) -> tuple[object, object, int]:
    """(fire_at, fired_at, DUE_SOON events of its instance)."""
    (row,) = _rows(
        embedded.database,
        "SELECT r.fire_at, r.fired_at, (SELECT COUNT(*) FROM events e WHERE e.instance_id = r.instance_id"
        " AND e.type = 'DUE_SOON') FROM instance_reminders r WHERE r.id = ?",
        reminder_id,
    )
    return row[0], row[1], int(str(row[2]))


async def _settled(embedded: Embedded, links: list[tuple[str, int, datetime]], within: float) -> None:
    async def all_settled() -> bool:
        states = await asyncio.to_thread(lambda: [_state(embedded, i) for i, _, _ in links])
        return all(fire_at is None for fire_at, _, _ in states)

    await eventually(all_settled, within, "every reminder fired or dropped")


async def test_a_herd_fires_as_one_set_and_drops_those_of_a_paused_task_on_sqlite(embedded: Embedded) -> None:
    task_ids, links = await _herd(embedded, 6)
    _rows(embedded.database, "UPDATE tasks SET state = 'PAUSED' WHERE id = ?", task_ids[0])
    await send(reminder_messages(links))
    await _settled(embedded, links, 20)
    states = [_state(embedded, i) for i, _, _ in links]
    assert states[0][1:] == (None, 0)  # dropped: never fired, no event
    assert [events for _, _, events in states[1:]] == [1] * 5
    assert len({fired_at for _, fired_at, _ in states[1:]}) == 1  # one transaction fired the five
    owners = _rows(
        embedded.database,
        "SELECT DISTINCT e.user_id = t.owner_id FROM events e JOIN tasks t ON t.id = e.task_id"
        " WHERE e.type = 'DUE_SOON'",
    )
    assert owners == [(1,)]


async def test_a_row_that_fails_the_set_is_fired_alone_and_the_others_fire_on_sqlite(
    embedded: Embedded,
) -> None:
    task_ids, links = await _herd(embedded, 4)
    (bad_instance,) = _rows(
        embedded.database,
        "SELECT id FROM task_instances WHERE task_id = ? AND status = 'PENDING'",
        task_ids[0],
    )[0]
    _rows(
        embedded.database,
        "CREATE TRIGGER refuse_one BEFORE INSERT ON events"
        f" WHEN NEW.instance_id = '{bad_instance}' BEGIN SELECT RAISE(ABORT, 'refused by the test'); END",
    )
    try:
        await send(reminder_messages(links))

        async def others_fired() -> bool:
            states = await asyncio.to_thread(lambda: [_state(embedded, i) for i, _, _ in links[1:]])
            return all(events == 1 for _, _, events in states)

        await eventually(others_fired, 20, "the good reminders fired one by one after the set failed")
        assert re.search(r"firing \d+ reminders as a set failed", embedded.worker.log())
        assert _state(embedded, links[0][0])[0] is not None  # still owed: the pump resends it
    finally:
        _rows(embedded.database, "DROP TRIGGER refuse_one")
    await _settled(embedded, links, 30)
    assert [_state(embedded, i)[2] for i, _, _ in links] == [1] * len(links)
