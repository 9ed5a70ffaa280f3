"""The two backends Proofloop runs on, and a running Proofloop on either, for tests that must hold on both.

PostgreSQL and the shared Redis are production's; the embedded default is `make run`'s (a SQLite file and an
embedded Redis under the data dir, with `proofloop dev`'s defaults). A test runs on PostgreSQL; marked
`both_backends`, it runs once on each (tests/conftest.py parametrizes the `backend` fixture it reaches
through `deployment` or `api_deployment`, or through a module's own fixture built with `deployed`). Rows are read and arranged
through `Deployment.sql`, in one form for both databases.
"""

from __future__ import annotations

import asyncio
import re
import sqlite3
import uuid
from collections.abc import AsyncIterator, Iterator
from contextlib import ExitStack, asynccontextmanager, contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from enum import StrEnum
from pathlib import Path
from typing import Any

import asyncpg
import dramatiq
import pytest

from actors.broker import configure_broker
from cli import DEV_DEFAULTS
from harness.mailbox import Mailbox
from harness.private_services import PrivateRedis
from harness.proofloop import (
    ApiClient,
    ServerProcess,
    WorkerProcess,
    free_port,
    migrated_database,
    migrated_sqlite,
)
from settings import Settings

both_backends = pytest.mark.both_backends

# the run's settings that name where its data lives and what it listens on: an embedded deployment has its own
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
    """A running Proofloop: its API, the workers that serve it, its database, the settings its processes
    run with, and the mailbox its mail goes to."""

    backend: Backend
    server: ServerProcess
    workers: tuple[WorkerProcess, ...]
    database: str  # a PostgreSQL URL, or the path of the SQLite file
    redis_url: str
    env: dict[str, str]
    mailbox: Mailbox

    @property
    def worker(self) -> WorkerProcess:
        assert self.workers, "this deployment runs no worker"
        return self.workers[0]

    @property
    def url(self) -> str:
        return self.server.url

    @property
    def data_dir(self) -> Path:
        return Path(self.env["PROOFLOOP_DATA_DIR"])

    def client(self) -> ApiClient:
        return ApiClient(self.url, self.mailbox)

    @contextmanager
    def broker(self) -> Iterator[None]:
        """Dramatiq's broker in this process, on the deployment's Redis: messages sent reach its workers."""
        configure_broker(self.redis_url)
        try:
            yield
        finally:
            dramatiq.get_broker().close()

    async def sql(self, statement: str, *args: object) -> list[tuple[Any, ...]]:
        """The rows of `statement` (parameters written `$1`, `$2`… on both databases): instants and ids
        are passed as each database stores them."""
        if self.backend is Backend.POSTGRESQL:
            conn = await asyncpg.connect(self.database)
            try:
                return [tuple(row) for row in await conn.fetch(statement, *args)]
            finally:
                await conn.close()
        return await asyncio.to_thread(self._sqlite, _numbered(statement), args)

    async def sql_many(self, statement: str, rows: list[tuple[object, ...]]) -> None:
        """`statement` once for each of `rows`, in one transaction."""
        if self.backend is Backend.POSTGRESQL:
            conn = await asyncpg.connect(self.database)
            try:
                await conn.executemany(statement, rows)
            finally:
                await conn.close()
            return
        await asyncio.to_thread(self._sqlite_many, _numbered(statement), rows)

    def _sqlite(self, statement: str, args: tuple[object, ...]) -> list[tuple[Any, ...]]:
        with sqlite3.connect(self.database, timeout=10) as db:
            return list(db.execute(statement, [_as_sqlite_stores(a) for a in args]))

    def _sqlite_many(self, statement: str, rows: list[tuple[object, ...]]) -> None:
        with sqlite3.connect(self.database, timeout=10) as db:
            db.executemany(statement, [[_as_sqlite_stores(a) for a in row] for row in rows])


@asynccontextmanager
async def refusing_events_of(deployment: Deployment, instance_id: str) -> AsyncIterator[None]:
    """While the block runs, every insert of an event of `instance_id` fails (a trigger): a set that
    writes one fails whole, and so does that row's own settlement."""
    name = f"refuse_{instance_id.replace('-', '')}"
    if deployment.backend is Backend.POSTGRESQL:
        create = [
            f"CREATE FUNCTION {name}() RETURNS trigger LANGUAGE plpgsql AS"
            " $$ BEGIN RAISE EXCEPTION 'refused by the test'; END $$",
            f"CREATE TRIGGER {name} BEFORE INSERT ON events FOR EACH ROW"
            f" WHEN (NEW.instance_id = '{instance_id}') EXECUTE FUNCTION {name}()",
        ]
        drop = [f"DROP TRIGGER {name} ON events", f"DROP FUNCTION {name}()"]
    else:
        create = [
            f"CREATE TRIGGER {name} BEFORE INSERT ON events WHEN NEW.instance_id = '{instance_id}'"
            " BEGIN SELECT RAISE(ABORT, 'refused by the test'); END"
        ]
        drop = [f"DROP TRIGGER {name}"]
    for statement in create:
        await deployment.sql(statement)
    try:
        yield
    finally:
        for statement in drop:
            await deployment.sql(statement)


def _numbered(statement: str) -> str:
    return re.sub(r"\$(\d+)", r"?\1", statement)  # $1 (PostgreSQL's) as ?1 (SQLite's)


def _as_sqlite_stores(value: object) -> object:
    if isinstance(value, datetime):  # Tortoise's text form of an instant: comparisons order as instants
        return value.astimezone(UTC).isoformat(" ")
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
        **settings,
    }


@contextmanager
def deployed(
    request: pytest.FixtureRequest,
    backend: Backend,
    settings: dict[str, str] | None = None,
    *,
    workers: int = 0,
    private: bool = False,
    api_only: bool = False,
) -> Iterator[Deployment]:
    """A Proofloop of a test module's own on `backend`, with `settings` over the run's, and `workers`
    worker processes of its own. On PostgreSQL its API uses the run's database and Redis, served by the
    run's worker when it has none of its own; `private` gives it a database and a redis-server of its own,
    so that no other test's worker takes its links. On the embedded default, an API and at least one
    worker on a fresh data dir. `api_only`: no worker at all, for tests of what the API alone does."""
    run_env: dict[str, str] = request.getfixturevalue("service_env")
    mailbox: Mailbox = request.getfixturevalue("mailbox")
    with ExitStack() as stack:
        if backend is Backend.POSTGRESQL:
            env = {**run_env, **(settings or {})}
            if private:
                assert workers, "nothing else serves a private database"
                env["PROOFLOOP_REDIS_URL"] = stack.enter_context(PrivateRedis()).url
                env["PROOFLOOP_DATABASE_URL"] = stack.enter_context(migrated_database("proofloop_private"))
            database, redis_url = env["PROOFLOOP_DATABASE_URL"], env["PROOFLOOP_REDIS_URL"]
        else:
            data_dir = request.getfixturevalue("tmp_path_factory").mktemp("embedded")
            env = embedded_env(run_env, data_dir, settings or {})
            database = str(migrated_sqlite(data_dir))
            redis_url = Settings(data_dir=data_dir).resolved_redis_url  # the one its processes share
            workers = max(workers, 1)
        server = stack.enter_context(ServerProcess(env, port=free_port()))
        if api_only:
            yield Deployment(backend, server, (), database, redis_url, env, mailbox)
            return
        own = [
            stack.enter_context(WorkerProcess({**env, "PROOFLOOP_WORKER_METRICS_PORT": str(free_port())}))
            for _ in range(workers)
        ]
        serving = tuple(own) or (request.getfixturevalue("worker"),)
        yield Deployment(backend, server, serving, database, redis_url, env, mailbox)
