"""Readiness through faults: /readyz of the API and of the worker say what is down, answer instead of
hanging while PostgreSQL is paused, and are ready again by themselves; a Redis restart costs no failed
readiness check and no failed event notice (stale pooled connections are retried once)."""

from __future__ import annotations

import asyncio
import json
import time
import urllib.error
import urllib.request

from harness.chain_support import create_short_task
from harness.chaos import ChaosRun, Shape
from harness.private_services import PrivatePostgres, PrivateRedis
from harness.proofloop import ApiClient

IDLE = Shape(tasks=0, every=2, start_in=2, before=0, after=0, pause=0)


def readyz(url: str) -> tuple[int, dict[str, object]]:
    """(status, body); a client timeout far above the server's own bound, so a hang shows as status 0."""
    try:
        with urllib.request.urlopen(f"{url}/readyz", timeout=5) as response:
            return int(response.status), json.loads(response.read())
    except urllib.error.HTTPError as exc:
        return int(exc.code), json.loads(exc.read())
    except OSError:
        return 0, {}


async def until_status(url: str, status: int, within: float = 15) -> dict[str, object]:
    deadline = time.monotonic() + within
    while True:
        got, body = await asyncio.to_thread(readyz, url)
        if got == status:
            return body
        if time.monotonic() > deadline:
            raise AssertionError(f"{url}/readyz answered {got} {body}, not {status}")
        await asyncio.sleep(0.3)


async def test_readiness_follows_redis_and_postgres(
    private_pg: PrivatePostgres, private_redis: PrivateRedis, database_name: str
) -> None:
    run = ChaosRun(private_pg, private_redis, database_name, IDLE)
    worker_url = f"http://127.0.0.1:{run.metrics_port}"
    async with run.running():
        assert run.api is not None and run.worker is not None
        await until_status(worker_url, 200)
        assert (await asyncio.to_thread(readyz, run.api_url))[0] == 200
        async with ApiClient(run.api_url) as api:
            token, _ = await api.register()
            await create_short_task(api, token, start_in=1, every=1)

        # a restart while nobody looks: the first look afterwards finds Redis ready
        await asyncio.to_thread(private_redis.restart, 0.5)
        status, body = await asyncio.to_thread(readyz, run.api_url)
        assert status == 200, body
        await asyncio.sleep(3)  # the task settles again: the worker's event notices go out on the new Redis
        assert "publishing event notices failed" not in run.worker.log()
        assert "publishing event notices failed" not in run.api.log()

        private_redis.stop()
        try:
            status, body = await asyncio.to_thread(readyz, run.api_url)
            assert status == 503 and body["checks"]["redis"].startswith("error"), body  # type: ignore[index]
            await until_status(worker_url, 503)
        finally:
            private_redis.start()
        await until_status(worker_url, 200)

        private_pg.pause()
        try:
            status, body = await asyncio.to_thread(readyz, run.api_url)
            assert status == 503 and body["checks"]["database"] == "error: timeout", body  # type: ignore[index]
            worker_body = await until_status(worker_url, 503)
        finally:
            private_pg.resume()
        assert "database" in json.dumps(worker_body)
        await until_status(run.api_url, 200)
        await until_status(worker_url, 200)
        assert run.api.proc is not None and run.api.proc.poll() is None
        assert run.worker.proc is not None and run.worker.proc.poll() is None
