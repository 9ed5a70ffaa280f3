"""The Tortoise configuration, built from settings (also read by the `tortoise` migrations CLI).

This is where the database is configured: runtime.open_database and the migrations open it from here.
"""

from __future__ import annotations

from typing import Any

from tortoise.backends.base.config_generator import expand_db_url

from settings import Settings, get_settings

MODEL_MODULES = ["models"]
SQLITE_BUSY_TIMEOUT_MS = 15_000
# Tortoise has no setting for how a transaction begins: this engine is its SQLite client with BEGIN IMMEDIATE
SQLITE_IMMEDIATE_ENGINE = "models.sqlite_immediate"


def _sqlite(connection: dict[str, Any]) -> None:
    """SQLite under several processes (DESIGN.md, Runtime): WAL (Tortoise's default journal mode), a busy
    timeout, and BEGIN IMMEDIATE for every transaction, so one that reads then writes waits for the write
    lock instead of failing with "database is locked"."""
    connection["engine"] = SQLITE_IMMEDIATE_ENGINE
    connection["credentials"].setdefault("busy_timeout", SQLITE_BUSY_TIMEOUT_MS)
    connection["credentials"].setdefault("synchronous", "NORMAL")


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


TORTOISE_ORM = tortoise_config(get_settings())
