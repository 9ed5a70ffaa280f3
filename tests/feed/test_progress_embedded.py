"""Progress on the embedded default database (SQLite), through the real API."""

from __future__ import annotations

import sqlite3
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from harness.proofloop import ApiClient, ServerProcess, create_open_task, free_port, migrated_sqlite, row_key
from tests.support.progress import HISTORY_A, USER_PROGRESS, Written, expected_calendar


@pytest.fixture(scope="module")
def embedded(
    tmp_path_factory: pytest.TempPathFactory, redis_url: str
) -> Iterator[tuple[ServerProcess, Path]]:
    data_dir: Path = tmp_path_factory.mktemp("embedded-progress")
    env = {
        "PROOFLOOP_DATA_DIR": str(data_dir),
        "PROOFLOOP_REDIS_URL": redis_url,
        "PROOFLOOP_SECRET_KEY": "k",
        # the run's Redis counts every test's registrations from 127.0.0.1: the limit has its own test
        "PROOFLOOP_AUTH_ADDRESS_ATTEMPTS": "100000",
    }
    database = migrated_sqlite(data_dir)  # no PROOFLOOP_DATABASE_URL: the SQLite file under the data dir
    with ServerProcess(env, port=free_port()) as proc:
        yield proc, database


def write_history(database: Path, task_id: str, open_id: str) -> list[Written]:
    """Settled rows before the open instance, with times stored as the server stores them."""
    now = datetime.now(UTC)
    rows = [Written(str(uuid.uuid4()), now - timedelta(days=ago, hours=1), s) for ago, s in HISTORY_A]
    with sqlite3.connect(database) as db:
        (stored,) = db.execute(
            "SELECT due_at FROM task_instances WHERE id = ?", (row_key(open_id),)
        ).fetchone()
        # the server's own text form of an instant, so comparisons in SQL order as instants
        separator = "T" if "T" in stored else " "
        db.executemany(
            "INSERT INTO task_instances (id, task_id, seq, chain_version, opens_at, due_at, closes_at,"
            " status, settled_at, created_at, link_no, proofs_counted)"
            " VALUES (?1, ?2, ?3, 1, ?4, ?4, ?4, ?5, ?4, ?4, 0, 0)",
            [
                (row.id, row_key(task_id), n - len(rows), row.due.isoformat(sep=separator), row.status)
                for n, row in enumerate(rows)
            ],
        )
    return rows


async def test_progress_on_sqlite(embedded: tuple[ServerProcess, Path]) -> None:
    server, database = embedded
    api = ApiClient(server.url)
    token, _ = await api.register()
    task_id, open_id = await create_open_task(api, token, "PHOTO")
    rows = write_history(database, task_id, open_id)
    due = await api.execute("query($id: ID!) { instance(id: $id) { dueAt } }", {"id": open_id}, token=token)
    rows.append(
        Written(row_key(open_id), datetime.fromisoformat(due["instance"]["dueAt"]).astimezone(UTC), "PENDING")
    )
    today = datetime.now(UTC).date()
    first, last = today - timedelta(days=11), today + timedelta(days=1)

    progress = (
        await api.execute(USER_PROGRESS, {"from": first.isoformat(), "to": last.isoformat()}, token=token)
    )["progress"]
    assert (progress["r7"], progress["r30"], progress["r90"]) == (4 / 5, 7 / 9, 7 / 10)
    assert (progress["currentStreak"], progress["bestStreak"]) == (2, 3)
    assert progress["calendar"] == expected_calendar(rows, first, last)
