"""Integration fixtures: the ORM and a plain connection in this process, the broker for sending links
from it, and private databases for tests that crash workers."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator

import asyncpg
import dramatiq
import pytest
from tortoise import Tortoise

from actors.broker import configure_broker
from harness.private_services import PrivateRedis
from harness.proofloop import migrated_database
from models.config import tortoise_config
from settings import Settings


@pytest.fixture(scope="session")
async def orm(database_url: str) -> AsyncIterator[None]:
    """Tortoise in the test process, on the run's (migrated) PostgreSQL database."""
    await Tortoise.init(
        config=tortoise_config(Settings(database_url=database_url)), _enable_global_fallback=True
    )
    yield
    await Tortoise.close_connections()


@pytest.fixture
async def db(database_url: str) -> AsyncIterator[asyncpg.Connection]:
    """A plain connection to the run's database, for reading and arranging rows by SQL."""
    conn = await asyncpg.connect(database_url)
    yield conn
    await conn.close()


@pytest.fixture
def broker(redis_url: str) -> Iterator[None]:
    """Dramatiq's broker in this process, on the run's Redis: links sent here reach the run's worker."""
    configure_broker(redis_url)
    yield None
    dramatiq.get_broker().close()


@pytest.fixture
def private_env(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, str]]:
    """A database and a redis-server of their own: for tests that stop, kill or flush workers (a database
    index on the shared server would be another run's, whose workers would take these links)."""
    with PrivateRedis() as private_redis, migrated_database("proofloop_chaos") as db_url:
        redis_url = private_redis.url
        yield {
            "PROOFLOOP_DATABASE_URL": db_url,
            "PROOFLOOP_REDIS_URL": redis_url,
            "PROOFLOOP_DATA_DIR": str(tmp_path_factory.mktemp("private")),
            "PROOFLOOP_MIN_INTERVAL_SECONDS": "1",
            "PROOFLOOP_PUMP_INTERVAL_SECONDS": "1",
            "PROOFLOOP_LINK_OVERDUE_SECONDS": "2",
            "PROOFLOOP_SECRET_KEY": "test-secret-key",
            "PROOFLOOP_WORKER_METRICS_PORT": "0",
        }
