"""Transactions with after-commit hooks, the database clock, and per-task locking.

Everything that must happen only if a transaction commits (sending chain links, publishing events)
is registered with `on_commit`, or buffered with `buffer_until_commit`, and runs after COMMIT; a
rollback drops it (polar's pattern).
"""

from __future__ import annotations

import contextvars
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, TypeVar

from tortoise.backends.base.client import BaseDBAsyncClient
from tortoise.connection import get_connection
from tortoise.transactions import in_transaction

AfterCommit = Callable[[], Awaitable[None]]
T = TypeVar("T")


@dataclass
class _CommitWork:
    """What the current transaction does once it commits: hooks in order, and the batches they flush."""

    hooks: list[AfterCommit] = field(default_factory=list)
    batches: dict[object, list[Any]] = field(default_factory=dict)


_after_commit: contextvars.ContextVar[_CommitWork | None] = contextvars.ContextVar(
    "proofloop_after_commit", default=None
)


def connection() -> BaseDBAsyncClient:
    return get_connection("default")


def is_sqlite() -> bool:
    return connection().capabilities.dialect == "sqlite"


@asynccontextmanager
async def write_transaction() -> AsyncIterator[BaseDBAsyncClient]:
    """A transaction that writes (BEGIN IMMEDIATE on SQLite, see models/config.py); nested ones join it."""
    if _after_commit.get() is not None:
        yield connection()
        return
    pending = _CommitWork()
    token = _after_commit.set(pending)
    try:
        async with in_transaction("default") as conn:
            yield conn
    finally:
        _after_commit.reset(token)
    for hook in pending.hooks:
        await hook()


def _pending(what: str) -> _CommitWork:
    pending = _after_commit.get()
    if pending is None:
        raise RuntimeError(f"{what} outside write_transaction")
    return pending


def on_commit(hook: AfterCommit) -> None:
    """Run `hook` after the current transaction commits; outside write_transaction it is a RuntimeError."""
    hooks = _pending("on_commit").hooks
    if hook not in hooks:  # e.g. one announcement covers every event of the transaction
        hooks.append(hook)


def buffer_until_commit(flush: Callable[[list[T]], Awaitable[None]], item: T) -> None:
    """Add `item` to this transaction's batch for `flush`, which gets the whole batch once after commit
    (in the place of the first item among the other hooks); a rollback drops the batch."""
    pending = _pending("buffer_until_commit")
    batch = pending.batches.get(flush)
    if batch is None:
        batch = pending.batches[flush] = []

        async def flush_batch() -> None:
            await flush(batch)

        pending.hooks.append(flush_batch)
    batch.append(item)


async def db_now() -> datetime:
    """The database's clock: one clock for every process that decides an outcome."""
    conn = connection()
    if conn.capabilities.dialect == "sqlite":
        # SQLite is embedded: its clock is this host's, shared by every process using the file
        return datetime.now(UTC)
    rows: list[dict[str, Any]] = await conn.execute_query_dict("SELECT clock_timestamp() AS now")
    now: datetime = rows[0]["now"]
    return now.astimezone(UTC)


def as_utc(value: Any) -> datetime:
    """A timestamp as read by hand-written SQL, in UTC (SQLite hands back the stored ISO text)."""
    if isinstance(value, str):
        value = datetime.fromisoformat(value)
    assert isinstance(value, datetime)
    return value.astimezone(UTC)
