"""A private PostgreSQL cluster and a private redis-server, each on a free port under a temp dir, that a
chaos test may restart, pause, flush or kill: never the machine's shared 5432 and 6379.

PostgreSQL refuses to run as root, so the cluster is initialised and run as the `postgres` OS user.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from types import TracebackType

import psutil
import redis

from harness.ports import free_port
from harness.proofloop import migrated_database

PG_BIN = Path(os.environ.get("PROOFLOOP_CHAOS_PG_BIN", "/usr/lib/postgresql/15/bin"))
REDIS_SERVER = os.environ.get("PROOFLOOP_CHAOS_REDIS_SERVER", "/usr/bin/redis-server")
PG_USER = "postgres"


def _as_postgres(args: list[str], timeout: float = 60, environment: dict[str, str] | None = None) -> None:
    """`args` as the postgres OS user, with `environment` added (set inside su's command: su drops
    variables such as LD_PRELOAD)."""
    extra = environment or {}
    command = " ".join(f"'{a}'" for a in args)
    if os.geteuid() == 0:
        if extra:
            command = "env " + " ".join(f"'{k}={v}'" for k, v in extra.items()) + " " + command
        subprocess.run(["su", PG_USER, "-c", command], check=True, capture_output=True, timeout=timeout)
    else:
        subprocess.run(args, check=True, capture_output=True, timeout=timeout, env={**os.environ, **extra})


def _stop_tree(pid: int, sig: int) -> None:
    try:
        root = psutil.Process(pid)
        tree = [root, *root.children(recursive=True)]
    except psutil.NoSuchProcess:
        return
    for proc in tree:
        try:
            proc.send_signal(sig)
        except psutil.NoSuchProcess:
            continue


class PrivatePostgres:
    """initdb + pg_ctl under a temp dir; trust auth on 127.0.0.1 and a free port; `environment` is added to
    the server's (e.g. a shifted clock)."""

    def __init__(self, environment: dict[str, str] | None = None) -> None:
        self.environment = environment or {}
        self.port = free_port()
        self.root = Path(tempfile.mkdtemp(prefix="proofloop-chaos-pg-"))
        self.data = self.root / "data"
        self.log = self.root / "postgres.log"
        self.paused = False

    @property
    def admin_url(self) -> str:
        return f"postgres://postgres@127.0.0.1:{self.port}/postgres"

    def url(self, database: str) -> str:
        return f"postgres://postgres@127.0.0.1:{self.port}/{database}"

    def __enter__(self) -> PrivatePostgres:
        if os.geteuid() == 0:
            shutil.chown(self.root, PG_USER, PG_USER)
        _as_postgres(
            [str(PG_BIN / "initdb"), "-D", str(self.data), "-A", "trust", "-U", "postgres", "-E", "UTF8"]
        )
        self.start()
        return self

    def start(self) -> None:
        options = (
            f"-p {self.port} -k {self.root} -c listen_addresses=127.0.0.1 -c fsync=off"
            " -c synchronous_commit=off -c full_page_writes=off -c max_connections=200"
        )
        _as_postgres(
            [str(PG_BIN / "pg_ctl"), "-D", str(self.data), "-o", options, "-l", str(self.log), "-w", "start"],
            environment=self.environment,
        )

    def stop(self, mode: str = "fast") -> None:
        if self.paused:
            self.resume()
        _as_postgres([str(PG_BIN / "pg_ctl"), "-D", str(self.data), "-m", mode, "-w", "stop"])

    def restart(self) -> None:
        self.stop()
        self.start()

    def postmaster_pid(self) -> int:
        return int((self.data / "postmaster.pid").read_text().splitlines()[0])

    def pause(self) -> None:
        """SIGSTOP the postmaster and every backend: connections stay open, nothing answers."""
        _stop_tree(self.postmaster_pid(), signal.SIGSTOP)
        self.paused = True

    def resume(self) -> None:
        _stop_tree(self.postmaster_pid(), signal.SIGCONT)
        self.paused = False

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        with contextlib.suppress(subprocess.SubprocessError, OSError, ValueError):
            self.stop(mode="immediate")
        shutil.rmtree(self.root, ignore_errors=True)


class PrivateRedis:
    """/usr/bin/redis-server on a free port, no persistence: a restart loses everything, as it would."""

    def __init__(self) -> None:
        self.port = free_port()
        self.root = Path(tempfile.mkdtemp(prefix="proofloop-chaos-redis-"))
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def __enter__(self) -> PrivateRedis:
        self.start()
        return self

    def start(self) -> None:
        with open(self.root / "redis.log", "ab") as log:
            self.proc = subprocess.Popen(
                [
                    REDIS_SERVER,
                    "--port",
                    str(self.port),
                    "--bind",
                    "127.0.0.1",
                    "--save",
                    "",
                    "--appendonly",
                    "no",
                    "--dir",
                    str(self.root),
                ],
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        client = redis.Redis.from_url(self.url)
        deadline = time.monotonic() + 10
        while True:
            try:
                client.ping()
                return
            except redis.ConnectionError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.05)
            finally:
                client.close()

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            self.proc.wait(timeout=10)

    def restart(self, down_seconds: float = 0.5) -> None:
        self.stop()
        time.sleep(down_seconds)
        self.start()

    def flushall(self) -> None:
        client = redis.Redis.from_url(self.url)
        try:
            client.flushall()
        finally:
            client.close()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        shutil.rmtree(self.root, ignore_errors=True)


@contextlib.contextmanager
def local_receivers_env(
    service_env: dict[str, str], database_prefix: str, overrides: dict[str, str] | None = None
) -> Iterator[dict[str, str]]:
    """The run's settings on a PostgreSQL database and a redis-server of their own, with webhooks to
    receivers on this machine allowed (as under `make run`): the run's own worker keeps production's
    address rules and would refuse them, so it must never see this environment's deliveries."""
    with PrivateRedis() as redis_server, migrated_database(database_prefix) as url:
        yield {
            **service_env,
            "PROOFLOOP_DATABASE_URL": url,
            "PROOFLOOP_REDIS_URL": redis_server.url,
            "PROOFLOOP_WORKER_METRICS_PORT": str(free_port()),
            "PROOFLOOP_WEBHOOK_ALLOW_INSECURE": "true",
            **(overrides or {}),
        }
