"""The committed migrations describe the models exactly: no model change is left without its migration."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from harness.proofloop import ROOT

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
