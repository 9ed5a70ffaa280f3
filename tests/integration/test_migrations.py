"""The committed migrations describe the models exactly: no model change is left without its migration."""

from __future__ import annotations

from pathlib import Path

from tortoise.cli.cli import tortoise_cli_context
from tortoise.migrations.autodetector import MigrationAutodetector

from models.config import tortoise_config
from settings import Settings


async def test_models_and_migrations_agree(tmp_path: Path) -> None:
    config = tortoise_config(Settings(data_dir=tmp_path))  # a throwaway SQLite file: nothing is applied
    async with tortoise_cli_context(config) as ctx:
        assert ctx.apps is not None
        pending = await MigrationAutodetector(ctx.apps, config["apps"]).changes()
    assert pending == [], "models changed without a migration: run `tortoise makemigrations`"
