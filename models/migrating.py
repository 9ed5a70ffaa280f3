"""Applying the migrations: the one entry point `proofloop migrate` (and `proofloop dev`) use.

On SQLite, altering a column rebuilds its table (create the new one, copy the rows, drop the old one),
and with foreign keys enforced, dropping the old table deletes, by cascade, every row that refers to it
(a task's instances, their proofs and events). So migrations run with foreign keys off, as SQLite's
documentation prescribes for such a rebuild, and the keys are checked once they have run.
"""

from __future__ import annotations

from tortoise import Tortoise
from tortoise.migrations.api import migrate

from models.config import tortoise_config
from settings import Settings


class BrokenReferences(RuntimeError):
    """Rows that refer to rows that do not exist, found after the migrations ran."""


async def apply_migrations(settings: Settings, target: str | None = None) -> None:
    """Migrate the settings' database to `target` (a migration's name, e.g. "models.0008_reminders"),
    or to the latest; closes its connections after."""
    config = tortoise_config(settings)
    if settings.is_sqlite:
        config["connections"]["default"]["credentials"]["foreign_keys"] = "OFF"
    try:
        await migrate(config=config, target=target)
        if settings.is_sqlite:
            _, broken = await Tortoise.get_connection("default").execute_query("PRAGMA foreign_key_check")
            if broken:
                raise BrokenReferences(f"{len(broken)} rows refer to missing rows, e.g. {dict(broken[0])}")
    finally:
        await Tortoise.close_connections()
