"""Shared fixtures: a fresh PostgreSQL database and a clean Redis database per test run, real servers.

Nothing is faked: API tests talk to `proofloop serve` subprocesses over HTTP and websockets, chain tests
to real `dramatiq` worker processes, all on the machine's PostgreSQL and Redis. Tests that arrange or read
state in their own process get the ORM (`orm`), a plain connection (`db`), the broker (`broker`), and a
database and redis-server of their own (`private_env`) for tests that stop, kill or flush workers.
"""

from __future__ import annotations

import os
import sys
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import asyncpg
import dramatiq
import pytest
import redis
from tortoise import Tortoise

from actors.broker import configure_broker
from harness.forks import Shared
from harness.mailbox import Mailbox
from harness.object_store import MotoServer
from harness.private_services import PrivateRedis
from harness.proofloop import (
    ROOT,
    TEST_SECRET_KEY,
    ApiClient,
    ServerProcess,
    WorkerProcess,
    child_env,
    fork_from,
    free_port,
    migrated_database,
    use_run_settings,
)
from harness.reaper import end_descendants
from models.config import tortoise_config
from settings import Settings
from tests.support import durations
from tests.support.backends import Backend, Deployment, deployed
from tests.support.passwords import QUICK_PASSWORD_COST


def _redis_urls() -> tuple[str, str]:
    """(this process's database, its spare one). PROOFLOOP_TEST_REDIS_URL's database for a serial run;
    under pytest-xdist (`make test` runs six processes) worker gwN takes the database 2N below it and the
    one under that as its spare (one no process of the run takes as its own, for a test that keeps its own
    worker apart from the run's): 15/14, 13/12, 11/10, ..., so each process's workers see only its links.
    A run never takes database 0 or 1, where a developer's own data usually lives: seven processes at most."""
    url = os.environ.get("PROOFLOOP_TEST_REDIS_URL", "redis://127.0.0.1:6379/15")
    index = int(os.environ.get("PYTEST_XDIST_WORKER", "gw0").removeprefix("gw"))
    base, _, db = url.rpartition("/")
    own = int(db or 0) - 2 * index
    if own - 1 < 2:
        raise pytest.UsageError(
            f"test process gw{index} would take Redis database {own - 1} (below 2, where a developer's data "
            "lives): run fewer processes (TEST_PROCESSES) or start from a higher PROOFLOOP_TEST_REDIS_URL"
        )
    return f"{base}/{own}", f"{base}/{own - 1}"


REDIS_URL, SPARE_REDIS_URL = _redis_urls()


def pytest_addoption(parser: pytest.Parser) -> None:
    durations.add_option(parser)


def pytest_configure(config: pytest.Config) -> None:
    durations.configure(config)
    # every command the run starts hashes passwords at argon2's least cost unless a test sets its own: at
    # the default cost each hash takes about 0.2 s of a core, and hashing for the run's throwaway accounts
    # took a fifth of its CPU (docs/testing.md); tests/accounts/test_password_cost.py runs the default
    use_run_settings(QUICK_PASSWORD_COST)


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    """A test that reaches `backend` runs on PostgreSQL; marked `both_backends`, on each backend in turn
    (module-scoped, so a module starts each backend's processes once)."""
    if "backend" in metafunc.fixturenames:
        both = metafunc.definition.get_closest_marker("both_backends") is not None
        backends = list(Backend) if both else [Backend.POSTGRESQL]
        metafunc.parametrize("backend", backends, indirect=True, scope="module")


def pytest_report_header(config: pytest.Config) -> str:
    return f"file order: {durations.ORDER_SEED}={durations.order_seed(config)}"


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Files longest first, shuffled among those of similar length (tests/support/durations.py: the run ends
    within a short file of each process)."""
    durations.longest_files_first(items, durations.order_seed(config))


def pytest_sessionfinish(session: pytest.Session) -> None:
    """A run in one process (`pytest FILE`) ends whatever its tests left running, and names it; under
    `make test` (pytest-xdist) harness/reaper.py does this for the whole run."""
    if os.environ.get("PYTEST_XDIST_WORKER") or session.config.getoption("numprocesses", None):
        return
    left = end_descendants()
    if left:
        lines = "\n  ".join(left)
        print(f"\n{len(left)} process(es) outlived the tests and were killed:\n  {lines}", file=sys.stderr)
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


@pytest.fixture(scope="session", autouse=True)
def fork_server() -> Iterator[None]:
    """The run's `serve` and `worker` commands are forked from one process that imported the service once
    (harness/forks.py: it saves about 2 s of CPU per start), started when the first one is."""
    shared = Shared(child_env({}), ROOT)
    fork_from(shared)
    yield
    fork_from(None)
    shared.close()


@pytest.fixture(scope="session")
def database_url() -> Iterator[str]:
    """A PostgreSQL database of its own for this run, migrated with the real migrations, dropped after."""
    with migrated_database("proofloop_test") as url:
        yield url


@pytest.fixture(scope="session")
def redis_url() -> str:
    redis.Redis.from_url(REDIS_URL).flushdb()
    return REDIS_URL


@pytest.fixture(scope="session")
def spare_redis_url() -> str:
    """A Redis database of this process that the run's own worker does not read."""
    redis.Redis.from_url(SPARE_REDIS_URL).flushdb()
    return SPARE_REDIS_URL


@pytest.fixture(scope="session")
def data_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("proofloop-data")


@pytest.fixture(scope="session")
def mailbox() -> Iterator[Mailbox]:
    """A real SMTP server in this process: every mail the workers send lands here."""
    with Mailbox() as box:
        yield box


@pytest.fixture(scope="session")
def service_env(database_url: str, redis_url: str, data_dir: Path, mailbox: Mailbox) -> dict[str, str]:
    """The settings every process of this run shares."""
    return {
        "PROOFLOOP_DATABASE_URL": database_url,
        "PROOFLOOP_REDIS_URL": redis_url,
        "PROOFLOOP_DATA_DIR": str(data_dir),
        "PROOFLOOP_MIN_INTERVAL_SECONDS": "1",
        "PROOFLOOP_PUMP_INTERVAL_SECONDS": "1",
        "PROOFLOOP_LINK_OVERDUE_SECONDS": "2",
        # idle workers are most of the run's workers: polling every 250 ms instead of 100 halves what each
        # costs (its own CPU and Redis's), and no test asks for a link's precision (bench/ measures it)
        "PROOFLOOP_WORKER_POLL_MILLISECONDS": "250",
        "PROOFLOOP_SECRET_KEY": TEST_SECRET_KEY,
        "PROOFLOOP_WORKER_METRICS_PORT": str(free_port()),  # never a fixed port another run holds
        "PROOFLOOP_SMTP_URL": mailbox.url,
        "PROOFLOOP_PUBLIC_URL": "http://app.test",
        # every test registers from 127.0.0.1: the per-address limit has its own test
        "PROOFLOOP_AUTH_ADDRESS_ATTEMPTS": "100000",
        "PROOFLOOP_MAIL_REQUESTS_PER_HOUR": "1000",
        "PROOFLOOP_MAIL_SWEEP_SECONDS": "1",
    }


@pytest.fixture(scope="session")
def moto(tmp_path_factory: pytest.TempPathFactory) -> Iterator[MotoServer]:
    """A real S3-protocol server (moto's), started once per test process, on first use; buckets per test."""
    with MotoServer(tmp_path_factory.mktemp("moto")) as server:
        yield server


@pytest.fixture(scope="session")
def server(service_env: dict[str, str]) -> Iterator[ServerProcess]:
    """One API process for the run (tests that need two start their own)."""
    with ServerProcess(service_env, port=free_port()) as proc:
        yield proc


@pytest.fixture(scope="session")
def worker(service_env: dict[str, str], server: ServerProcess) -> Iterator[WorkerProcess]:
    with WorkerProcess(service_env) as proc:
        yield proc


@pytest.fixture
async def api(server: ServerProcess, worker: WorkerProcess, mailbox: Mailbox) -> AsyncIterator[ApiClient]:
    """A client of the run's API; the worker delivers mail (verification links) to `mailbox`."""
    async with ApiClient(server.url, mailbox) as client:
        yield client


@pytest.fixture(scope="module")
def backend(request: pytest.FixtureRequest) -> Backend:
    """Where this module's Proofloop runs (set by pytest_generate_tests above)."""
    backend: Backend = request.param
    return backend


@pytest.fixture(scope="module")
def deployment(backend: Backend, request: pytest.FixtureRequest) -> Iterator[Deployment]:
    """The run's Proofloop on `backend`, an API and the worker that serves it: the run's on PostgreSQL; on
    the embedded default, one of the module's own (stopped with the module: an idle worker kept for the
    whole run costs a few percent of a core)."""
    if backend is Backend.EMBEDDED:
        with deployed(request, backend) as running:
            yield running
        return
    yield _run_deployment(request)


@pytest.fixture(scope="module")
def api_deployment(backend: Backend, request: pytest.FixtureRequest) -> Deployment:
    """The run's API on `backend`, for tests of what the API alone does: on the embedded default one API
    per test process (`embedded_api`) and no worker."""
    if backend is Backend.EMBEDDED:
        embedded: Deployment = request.getfixturevalue("embedded_api")
        return embedded
    return _run_deployment(request)


@pytest.fixture(scope="session")
def embedded_api(request: pytest.FixtureRequest) -> Iterator[Deployment]:
    """The embedded default's API (SQLite and an embedded Redis, `proofloop dev`'s defaults and the run's
    test settings) without a worker, started once per test process on first use."""
    with deployed(request, Backend.EMBEDDED, api_only=True) as running:
        yield running


def _run_deployment(request: pytest.FixtureRequest) -> Deployment:
    server: ServerProcess = request.getfixturevalue("server")
    worker: WorkerProcess = request.getfixturevalue("worker")
    env: dict[str, str] = request.getfixturevalue("service_env")
    mailbox: Mailbox = request.getfixturevalue("mailbox")
    database, redis_url = env["PROOFLOOP_DATABASE_URL"], env["PROOFLOOP_REDIS_URL"]
    return Deployment(Backend.POSTGRESQL, server, (worker,), database, redis_url, env, mailbox)


# In-process access for the tests that arrange or read state directly: the ORM and a plain connection in
# this process, the broker for sending links from it, and private databases for tests that crash workers.


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
