"""A SQLite client whose transactions start with BEGIN IMMEDIATE (chosen in models/config.py).

A deferred BEGIN that reads and then writes fails with "database is locked" when another process
wrote in between, whatever the busy timeout; taking the write lock up front makes it wait instead.
Tortoise names an engine by module and reads its `client_class`: this module is that engine.
"""

from __future__ import annotations

import sqlite3

from tortoise.backends.base.client import TransactionContext
from tortoise.backends.sqlite.client import (
    SqliteClient,
    SqliteTransactionContext,
    SqliteTransactionWrapper,
)
from tortoise.exceptions import TransactionManagementError


class ImmediateTransactionWrapper(SqliteTransactionWrapper):
    async def begin(self) -> None:
        try:
            await self._connection.commit()
            await self._connection.execute("BEGIN IMMEDIATE")
        except sqlite3.OperationalError as exc:
            raise TransactionManagementError(exc) from exc


class ImmediateSqliteClient(SqliteClient):
    def _in_transaction(self) -> TransactionContext:
        return SqliteTransactionContext(ImmediateTransactionWrapper(self), self._lock)


client_class = ImmediateSqliteClient
