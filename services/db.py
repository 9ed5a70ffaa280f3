"""Transactions with after-commit hooks, the database clock, and per-task locking.

Everything that must happen only if a transaction commits (sending chain links, publishing events)
is registered with `on_commit` and runs after COMMIT; a rollback drops it (polar's pattern).
"""

from __future__ import annotations

import contextvars
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from datetime import UTC, datetime
from typing import Any

from tortoise.backends.base.client import BaseDBAsyncClient
from tortoise.connection import get_connection
from tortoise.transactions import in_transaction

AfterCommit = Callable[[], Awaitable[None]]

_after_commit: contextvars.ContextVar[list[AfterCommit] | None] = contextvars.ContextVar(
    "proofloop_after_commit", default=None
)


def connection() -> BaseDBAsyncClient:
    return get_connection("default")


def is_sqlite() -> bool:
    return connection().capabilities.dialect == "sqlite"


@asynccontextmanager
async def write_transaction() -> AsyncIterator[BaseDBAsyncClient]:
    """A transaction that writes: BEGIN IMMEDIATE on SQLite; nested calls join the outer one."""
    if _after_commit.get() is not None:
        yield connection()
        return
    hooks: list[AfterCommit] = []
    token = _after_commit.set(hooks)
    try:
        async with in_transaction("default") as conn:
            yield conn
    finally:
        _after_commit.reset(token)
    for hook in hooks:
        await hook()


def on_commit(hook: AfterCommit) -> None:
    """Run `hook` after the current transaction commits; outside write_transaction it is a RuntimeError."""
    hooks = _after_commit.get()
    if hooks is None:
        raise RuntimeError("on_commit outside write_transaction")
    if hook not in hooks:  # e.g. one announcement covers every event of the transaction
        hooks.append(hook)


async def db_now() -> datetime:
    """The database's clock: one clock for every process that decides an outcome."""
    conn = connection()
    if conn.capabilities.dialect == "sqlite":
        # SQLite is embedded: its clock is this host's, shared by every process using the file
        return datetime.now(UTC)
    rows: list[dict[str, Any]] = await conn.execute_query_dict("SELECT clock_timestamp() AS now")
    now: datetime = rows[0]["now"]
    return now.astimezone(UTC)
