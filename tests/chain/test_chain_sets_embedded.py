"""Settling in sets on the embedded default (SQLite + BEGIN IMMEDIATE), through the real API and worker."""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest

from harness.chain_support import CREATE, eventually, short_schedule
from harness.proofloop import ApiClient, ServerProcess, WorkerProcess, free_port, migrated_sqlite, row_key

TASKS = 6


@pytest.fixture(scope="module")
def embedded(
    tmp_path_factory: pytest.TempPathFactory, spare_redis_url: str
) -> Iterator[tuple[str, Path, WorkerProcess]]:
    data_dir: Path = tmp_path_factory.mktemp("embedded-sets")
    env = {
        "PROOFLOOP_DATA_DIR": str(data_dir),
        # not the run's Redis database: the run's worker (on PostgreSQL) would take these links and drop them
        "PROOFLOOP_REDIS_URL": spare_redis_url,
        "PROOFLOOP_SECRET_KEY": "k",
        "PROOFLOOP_MIN_INTERVAL_SECONDS": "1",
        "PROOFLOOP_PUMP_INTERVAL_SECONDS": "1",
        "PROOFLOOP_LINK_OVERDUE_SECONDS": "2",
        "PROOFLOOP_WORKER_METRICS_PORT": "0",
        # the run's Redis counts every test's registrations from 127.0.0.1: the limit has its own test
        "PROOFLOOP_AUTH_ADDRESS_ATTEMPTS": "100000",
    }
    database = migrated_sqlite(data_dir)  # no PROOFLOOP_DATABASE_URL: the SQLite file under the data dir
    with ServerProcess(env, port=free_port()) as server, WorkerProcess(env) as worker:
        yield server.url, database, worker


def _rows(database: Path, sql: str, *args: object) -> list[tuple[object, ...]]:
    with sqlite3.connect(database) as db:
        return list(db.execute(sql, args))


async def test_tasks_due_together_settle_as_sets_on_sqlite(embedded: tuple[str, Path, WorkerProcess]) -> None:
    url, database, worker = embedded
    api = ApiClient(url)
    token, _ = await api.register()
    schedule = short_schedule(start_in=2, every=2)  # one schedule: every instance of each due together
    tasks = [  # row keys, for SQL (the API takes them too)
        row_key(
            (
                await api.execute(
                    CREATE,
                    {"input": {"title": f"s{n}", "method": "PHOTO", "schedule": schedule}},
                    token=token,
                )
            )["createTask"]["id"]
        )
        for n in range(TASKS)
    ]

    def missed() -> int:
        return int(str(_rows(database, "SELECT COUNT(*) FROM task_instances WHERE status = 'MISSED'")[0][0]))

    async def three_rounds() -> bool:
        return await asyncio.to_thread(missed) >= 3 * TASKS

    await eventually(three_rounds, 40, "three rounds of instances MISSED")
    assert "instances as a set" in worker.log()
    for task_id in tasks:
        statuses = [
            r[0] for r in _rows(database, "SELECT status FROM task_instances WHERE task_id = ?", task_id)
        ]
        assert statuses.count("PENDING") == 1, statuses
        per_instance = _rows(
            database,
            "SELECT instance_id, COUNT(*) FROM events WHERE task_id = ? AND type = 'MISSED' GROUP BY instance_id",
            task_id,
        )
        assert {n for _, n in per_instance} == {1}
        assert len(per_instance) == statuses.count("MISSED")
    unpositioned = _rows(database, "SELECT COUNT(*) FROM events WHERE position IS NULL")[0][0]
    feed = await api.execute("{ events(first: 100) { id type } }", token=token)
    assert len([e for e in feed["events"] if e["type"] == "MISSED"]) >= 3 * TASKS - int(str(unpositioned))
