"""The two backends Proofloop runs on, and a running Proofloop on either, for tests that must hold on both.

PostgreSQL and the shared Redis are production's; the embedded default is `make run`'s (a SQLite file and an
embedded Redis under the data dir, with `proofloop dev`'s defaults). A test runs on PostgreSQL; marked
`both_backends`, it runs once on each (tests/conftest.py parametrizes the `backend` fixture it reaches
through `deployment`, or through a module's own fixture built with `deployed`). Rows are read and arranged
through `Deployment.sql`, in one form for both databases.
"""

from __future__ import annotations

import asyncio
import re
import sqlite3
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from enum import StrEnum
from pathlib import Path
from typing import Any

import asyncpg
import pytest

from cli import DEV_DEFAULTS
from harness.mailbox import Mailbox
from harness.proofloop import ApiClient, ServerProcess, WorkerProcess, free_port, migrated_sqlite

both_backends = pytest.mark.both_backends

# the run's settings that name where its data lives: an embedded deployment has its own
_PLACES = {
    "PROOFLOOP_DATABASE_URL",
    "PROOFLOOP_REDIS_URL",
    "PROOFLOOP_DATA_DIR",
    "PROOFLOOP_WORKER_METRICS_PORT",
}


class Backend(StrEnum):
    POSTGRESQL = "postgresql"
    EMBEDDED = "embedded"


@dataclass(frozen=True)
class Deployment:
    """A running Proofloop: its API and the worker that serves it, its database, the mailbox of its mail."""

    backend: Backend
    server: ServerProcess
    worker: WorkerProcess
    database: str  # a PostgreSQL URL, or the path of the SQLite file
    mailbox: Mailbox

    @property
    def url(self) -> str:
        return self.server.url

    def client(self) -> ApiClient:
        return ApiClient(self.url, self.mailbox)

    async def sql(self, statement: str, *args: object) -> list[tuple[Any, ...]]:
        """The rows of `statement` (parameters written `$1`, `$2`… on both databases): instants and ids
        are passed as each database stores them."""
        if self.backend is Backend.POSTGRESQL:
            conn = await asyncpg.connect(self.database)
            try:
                return [tuple(row) for row in await conn.fetch(statement, *args)]
            finally:
                await conn.close()
        return await asyncio.to_thread(self._sqlite, re.sub(r"\$(\d+)", r"?\1", statement), args)

    def _sqlite(self, statement: str, args: tuple[object, ...]) -> list[tuple[Any, ...]]:
        with sqlite3.connect(self.database, timeout=10) as db:
            return list(db.execute(statement, [_as_sqlite_stores(a) for a in args]))


def _as_sqlite_stores(value: object) -> object:
    if isinstance(value, datetime):
        return value.astimezone(UTC).isoformat(
            " "
        )  # Tortoise's text form of an instant: comparisons order as instants
    if isinstance(value, uuid.UUID):
        return str(value)
    return value


def embedded_env(run_env: dict[str, str], data_dir: Path, settings: dict[str, str]) -> dict[str, str]:
    """The run's test settings (timings, limits, its mail) on the embedded default under `data_dir`."""
    kept = {name: value for name, value in run_env.items() if name not in _PLACES}
    return {
        **kept,
        **DEV_DEFAULTS,
        "PROOFLOOP_DATA_DIR": str(data_dir),
        "PROOFLOOP_WORKER_METRICS_PORT": "0",
        **settings,
    }


@contextmanager
def deployed(
    request: pytest.FixtureRequest,
    backend: Backend,
    settings: dict[str, str] | None = None,
    *,
    own_worker: bool = False,
) -> Iterator[Deployment]:
    """A Proofloop of a test module's own on `backend`, with `settings` over the run's: on PostgreSQL an API
    on the run's database and Redis, served by the run's worker (or, with `own_worker`, by one started
    with the same settings beside it); on the embedded default an API and a worker on a fresh data dir."""
    run_env: dict[str, str] = request.getfixturevalue("service_env")
    mailbox: Mailbox = request.getfixturevalue("mailbox")
    settings = settings or {}
    if backend is Backend.POSTGRESQL:
        env = {**run_env, **settings}
        database = env["PROOFLOOP_DATABASE_URL"]
        with ServerProcess(env, port=free_port()) as server:
            if not own_worker:
                yield Deployment(backend, server, request.getfixturevalue("worker"), database, mailbox)
                return
            with WorkerProcess({**env, "PROOFLOOP_WORKER_METRICS_PORT": "0"}) as worker:
                yield Deployment(backend, server, worker, database, mailbox)
        return
    factory: pytest.TempPathFactory = request.getfixturevalue("tmp_path_factory")
    data_dir = factory.mktemp("embedded")
    env = embedded_env(run_env, data_dir, settings)
    sqlite_file = migrated_sqlite(data_dir)
    with ServerProcess(env, port=free_port()) as server, WorkerProcess(env) as worker:
        yield Deployment(backend, server, worker, str(sqlite_file), mailbox)
