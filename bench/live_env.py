"""A private environment for the live-latency benchmark: database, redis-server, connection counts."""

from __future__ import annotations

import asyncio
import contextlib
import subprocess
import tempfile
import time
import uuid
from collections.abc import Iterator

import asyncpg
import psutil
import redis

from harness.proofloop import free_port, run_cli
from services.kit.ids import event_ids

SECRET_KEY = "bench-secret"
# event ids are enciphered positions: the benches time each position from its commit
EVENT_IDS = event_ids(SECRET_KEY)

PG_ADMIN_URL = "postgres://postgres@127.0.0.1:5432/postgres"


@contextlib.contextmanager
def private_database() -> Iterator[str]:
    name = f"proofloop_bench_{uuid.uuid4().hex[:10]}"

    async def admin(sql: str) -> None:
        conn = await asyncpg.connect(PG_ADMIN_URL)
        try:
            await conn.execute(sql)
        finally:
            await conn.close()

    asyncio.run(admin(f'CREATE DATABASE "{name}"'))
    try:
        yield PG_ADMIN_URL.rsplit("/", 1)[0] + f"/{name}"
    finally:
        asyncio.run(admin(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))


@contextlib.contextmanager
def private_redis() -> Iterator[int]:
    port = free_port()
    args = [
        "/usr/bin/redis-server",
        "--port",
        str(port),
        "--bind",
        "127.0.0.1",
        "--save",
        "",
        "--appendonly",
        "no",
    ]
    proc = subprocess.Popen([*args, "--maxclients", "10000"], stdout=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 10
        while True:
            with contextlib.suppress(redis.ConnectionError):
                if redis.Redis(port=port).ping():
                    break
            if time.monotonic() > deadline:
                raise RuntimeError("redis-server did not start")
            time.sleep(0.05)
        yield port
    finally:
        proc.kill()
        proc.wait()


def api_redis_connections(api_pid: int, redis_port: int) -> tuple[int, int]:
    """(connections the API process holds to Redis, how many of them are pub/sub), from CLIENT LIST."""
    local_ports = {
        c.laddr.port
        for c in psutil.Process(api_pid).net_connections("tcp")
        if c.raddr and c.raddr.port == redis_port
    }
    clients = [
        c
        for c in redis.Redis(port=redis_port).client_list()
        if int(c["addr"].rsplit(":", 1)[1]) in local_ports
    ]
    return len(clients), sum(1 for c in clients if int(c.get("sub", 0)) or int(c.get("psub", 0)))


@contextlib.contextmanager
def live_env(overrides: dict[str, str] | None = None) -> Iterator[tuple[dict[str, str], int]]:
    """A migrated private database, a private redis-server and a data dir: (the processes' env, Redis port)."""
    with (
        private_database() as database_url,
        private_redis() as redis_port,
        tempfile.TemporaryDirectory() as data,
    ):
        env = {
            "PROOFLOOP_DATABASE_URL": database_url,
            "PROOFLOOP_REDIS_URL": f"redis://127.0.0.1:{redis_port}/0",
            "PROOFLOOP_DATA_DIR": data,
            "PROOFLOOP_SECRET_KEY": SECRET_KEY,
            **(overrides or {}),
        }
        run_cli(["migrate"], env)
        yield env, redis_port
