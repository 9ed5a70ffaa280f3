"""The Tortoise configuration, built from settings (also read by the `tortoise` migrations CLI).

This is where the database is configured: runtime.open_database and the migrations open it from here.
"""

from __future__ import annotations

from typing import Any

import asyncpg
from tortoise.backends.base.config_generator import expand_db_url

from settings import Settings, get_settings

MODEL_MODULES = ["models"]
SQLITE_BUSY_TIMEOUT_MS = 15_000
# Tortoise has no setting for how a transaction begins: this engine is its SQLite client with BEGIN IMMEDIATE
SQLITE_IMMEDIATE_ENGINE = "models.sqlite_immediate"


def _sqlite(connection: dict[str, Any]) -> None:
    """SQLite under several processes (docs/architecture.md, "Process resources"): WAL (Tortoise's default
    journal mode), a busy timeout, and BEGIN IMMEDIATE for every transaction, so one that reads then
    writes waits for the write lock instead of failing with "database is locked"."""
    connection["engine"] = SQLITE_IMMEDIATE_ENGINE
    connection["credentials"].setdefault("busy_timeout", SQLITE_BUSY_TIMEOUT_MS)
    connection["credentials"].setdefault("synchronous", "NORMAL")


# The array types the set-based statements bind (services/chain/settle_sql.py, settle_reads.py).
# asyncpg learns each one per connection by a catalog query the first time a statement binds it; a new
# connection learns them all in one query, instead of one query per statement during the burst that opened it.
_ARRAY_TYPES = "SELECT $1::uuid[], $2::timestamptz[], $3::int4[], $4::bool[]"


async def learn_array_types(connection: asyncpg.Connection) -> None:
    await connection.prepare(_ARRAY_TYPES)


def tortoise_config(settings: Settings) -> dict[str, Any]:
    url = settings.resolved_database_url
    if settings.is_sqlite:
        settings.data_dir.mkdir(parents=True, exist_ok=True)
    connection = expand_db_url(url)
    if settings.is_sqlite:
        _sqlite(connection)
    else:
        credentials = connection["credentials"]
        credentials.setdefault("minsize", 1)
        credentials.setdefault("maxsize", 10)
        credentials.setdefault("init", learn_array_types)
        # client-side bounds (asyncpg): a paused or unreachable server fails a call instead of hanging it
        credentials.setdefault("timeout", settings.database_connect_timeout_seconds)
        if settings.database_statement_timeout_seconds > 0:
            credentials.setdefault("command_timeout", settings.database_statement_timeout_seconds)
    return {
        "connections": {"default": connection},
        "apps": {
            "models": {
                "models": MODEL_MODULES,
                "default_connection": "default",
                "migrations": "models.migrations",
            }
        },
        "use_tz": True,
        "timezone": "UTC",
    }


def __getattr__(name: str) -> Any:
    """`TORTOISE_ORM` for Tortoise's own CLI (pyproject [tool.tortoise]), built when it is asked for:
    importing this module reads no settings and creates no data directory."""
    if name == "TORTOISE_ORM":
        return tortoise_config(get_settings())
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
