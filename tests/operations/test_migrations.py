"""The committed migrations describe the models exactly (no model change is left without its migration),
and take an installation with rows from an older schema to the latest."""

from __future__ import annotations

import asyncio
import importlib
import sqlite3
import subprocess
import sys
import uuid
from pathlib import Path

import asyncpg
from tortoise.fields import Field
from tortoise.migrations import operations as ops

from harness.proofloop import ROOT, _admin, child_env, pg_url

# In a process of its own: Tortoise's CLI context re-initialises the models for SQLite, which would leave
# this test process's ORM (the `orm` fixture, on PostgreSQL) building SQLite statements afterwards.
CHECK = """
import asyncio, sys
from tortoise.cli.cli import tortoise_cli_context
from tortoise.migrations.autodetector import MigrationAutodetector
from models.config import tortoise_config
from settings import Settings

async def pending():
    config = tortoise_config(Settings(data_dir=sys.argv[1]))  # a throwaway SQLite file: nothing is applied
    async with tortoise_cli_context(config) as ctx:
        assert ctx.apps is not None
        return await MigrationAutodetector(ctx.apps, config["apps"]).changes()

print(repr(asyncio.run(pending())))
"""


def test_models_and_migrations_agree(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-c", CHECK, str(tmp_path)], cwd=ROOT, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]", (
        f"models changed without a migration: run `tortoise makemigrations`\n{done.stdout}"
    )


# An installation at an older schema, with rows, migrated to the latest: every NOT NULL column a later
# migration adds is filled with its default (one without a database default fails on the first row), and
# on SQLite no row is lost to a table rebuild (models/migrating.py).
UPGRADE = """
import asyncio, sys
from tortoise import Tortoise
from models.config import tortoise_config
from models.migrating import apply_migrations
from settings import get_settings

async def run(target, sql):
    settings = get_settings()
    await apply_migrations(settings, target or None)
    if sql:
        await Tortoise.init(config=tortoise_config(settings))
        try:
            for statement in sql.split(";"):
                await Tortoise.get_connection("default").execute_query(statement)
        finally:
            await Tortoise.close_connections()

asyncio.run(run(sys.argv[1], sys.argv[2]))
"""
OLD_ROWS = (
    "INSERT INTO users (id, email, display_name, password_hash, timezone, created_at) VALUES"
    " ('11111111-1111-1111-1111-111111111111', 'a@example.com', 'a', 'x', 'UTC', '2026-01-01 00:00:00+00');"
    "INSERT INTO tasks (id, owner_id, title, method, starts_at, timezone, window_seconds, grace_seconds, state,"
    " chain_version, last_seq, created_at, updated_at) VALUES ('22222222-2222-2222-2222-222222222222',"
    " '11111111-1111-1111-1111-111111111111', 't', 'PHOTO', '2026-01-01 00:00:00+00', 'UTC', 60, 0, 'ACTIVE',"
    " 1, 1, '2026-01-01 00:00:00+00', '2026-01-01 00:00:00+00');"
    "INSERT INTO task_instances (id, task_id, seq, chain_version, opens_at, due_at, closes_at, status,"
    " created_at, link_no) VALUES ('33333333-3333-3333-3333-333333333333', '22222222-2222-2222-2222-222222222222',"
    " 1, 1, '2026-01-01 00:00:00+00', '2026-01-01 00:00:00+00', '2026-01-01 00:00:00+00', 'PENDING',"
    " '2026-01-01 00:00:00+00', 0)"
)
UPGRADED = (
    "SELECT u.commitment_horizon_days, t.require_capture_time, t.gps_avoid, i.proofs_counted FROM users u"
    " JOIN tasks t ON t.owner_id = u.id JOIN task_instances i ON i.task_id = t.id"
)


def _upgrade(env: dict[str, str]) -> None:
    for target, sql in (("models.0008_reminders", OLD_ROWS), ("", "")):
        done = subprocess.run(
            [sys.executable, "-c", UPGRADE, target, sql],
            cwd=ROOT,
            env=child_env(env),
            capture_output=True,
            text=True,
            timeout=180,
        )
        assert done.returncode == 0, done.stderr[-3000:]


def test_an_installation_with_rows_upgrades_to_the_latest_schema_on_postgresql() -> None:
    name = f"proofloop_upgrade_{uuid.uuid4().hex[:10]}"
    _admin(f'CREATE DATABASE "{name}"')
    try:
        _upgrade({"PROOFLOOP_DATABASE_URL": pg_url(name)})

        async def read() -> list[tuple[object, ...]]:
            conn = await asyncpg.connect(pg_url(name))
            try:
                rows = [tuple(r) for r in await conn.fetch(UPGRADED)]
                defaults = await conn.fetch(
                    "SELECT column_name FROM information_schema.columns WHERE table_name IN ('tasks',"
                    " 'task_instances') AND is_nullable = 'NO' AND column_default IS NULL"
                    " AND column_name IN ('require_capture_time', 'gps_avoid', 'proofs_counted')"
                )
                assert [d["column_name"] for d in defaults] == []  # older processes may insert without them
                return rows
            finally:
                await conn.close()

        assert asyncio.run(read()) == [(0, False, False, 0)]
    finally:
        _admin(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def test_an_installation_with_rows_upgrades_to_the_latest_schema_on_sqlite(tmp_path: Path) -> None:
    _upgrade({"PROOFLOOP_DATA_DIR": str(tmp_path), "PROOFLOOP_DATABASE_URL": ""})
    with sqlite3.connect(tmp_path / "proofloop.sqlite3") as db:
        assert db.execute(UPGRADED).fetchall() == [(0, 0, 0, 0)]


def test_every_column_added_to_an_existing_table_is_nullable_or_has_a_database_default() -> None:
    """So the table's rows are filled, and a previous release's processes keep inserting (docs/operations.md)."""
    bare = []
    for path in sorted((ROOT / "models" / "migrations").glob("0*.py")):
        migration = importlib.import_module(f"models.migrations.{path.stem}").Migration
        for op in migration.operations:
            field = op.field if isinstance(op, ops.AddField) else None
            if isinstance(field, Field) and not field.null and not field.has_db_default():
                bare.append(f"{path.stem}: {op.model_name}.{op.name}")
    assert bare == []
