"""Liveness and readiness, and the probe that ends an outage the API knows of.

Both /readyz and a failing request tell the process's outage state (observability/outages.py) that the
database or Redis does not answer; while one is down, GraphQL is refused at once and only the probe asks it
again, every PROOFLOOP_OUTAGE_PROBE_SECONDS, so the requests of a whole client base never pile onto it.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Coroutine
from importlib import resources
from typing import Any

import redis.asyncio as aioredis
from starlette.requests import Request
from starlette.responses import JSONResponse
from tortoise.backends.base.client import BaseDBAsyncClient

from observability.outages import Dependency, outage, set_retry_after, unreachable
from web.state import resources_of

Check = Callable[[], Coroutine[Any, Any, str]]


async def _database(database: BaseDBAsyncClient) -> str:
    rows = await database.execute_query_dict("SELECT COUNT(*) AS n FROM tortoise_migrations")
    return "ok" if int(rows[0]["n"]) >= expected_migrations() else "migrations pending"


async def _redis(redis: aioredis.Redis) -> str:
    await redis.ping()
    return "ok"


async def _within(
    dependency: Dependency, check: Check, limit: float, abandoned: set[asyncio.Task[str]], looker: str
) -> str:
    """The check's verdict, or "timeout" once `limit` seconds pass; a paused server never answers, and
    waiting for a cancelled driver call to unwind can itself take as long as the driver's own timeout.
    An answer ends the dependency's outage and a failed connection or statement starts one; a slow answer
    starts none: on a loaded machine the probe itself may be what is slow (a healthy database was declared
    down, and requests that had committed were answered SERVICE_UNAVAILABLE). A paused server is found by
    the statements that time out against it (the driver's own bound), as any request finds it."""
    task = asyncio.ensure_future(check())
    done, _ = await asyncio.wait({task}, timeout=limit)
    if not done:
        task.cancel()
        abandoned.add(task)  # held until it ends by the driver's own timeout
        task.add_done_callback(abandoned.discard)
        return "error: timeout"
    try:
        verdict = task.result()
    except Exception as exc:
        if unreachable(exc) is not None:
            outage(dependency).failed(looker, exc)
        return f"error: {type(exc).__name__}"
    outage(dependency).answered()
    return verdict


def readyz(timeout: float) -> Callable[[Request], Awaitable[JSONResponse]]:
    abandoned: set[asyncio.Task[str]] = set()

    async def endpoint(request: Request) -> JSONResponse:
        """Ready when the database answers with every migration applied and Redis answers, within
        `timeout` (both checked at once)."""
        resources = resources_of(request)
        database, redis = await asyncio.gather(
            _within("database", lambda: _database(resources.database), timeout, abandoned, "readiness"),
            _within("redis", lambda: _redis(resources.redis), timeout, abandoned, "readiness"),
        )
        checks = {"database": database, "redis": redis}
        ready = all(v == "ok" for v in checks.values())
        return JSONResponse({"ready": ready, "checks": checks}, status_code=200 if ready else 503)

    return endpoint


async def probe_outages(
    database: BaseDBAsyncClient, redis: aioredis.Redis, interval: float, limit: float
) -> None:
    """For the API's life: every `interval` seconds, ask each dependency that is down whether it answers;
    its answer ends the outage (a request never does: none runs against the database meanwhile)."""
    set_retry_after(interval)
    abandoned: set[asyncio.Task[str]] = set()
    checks: dict[Dependency, Check] = {
        "database": lambda: _database(database),
        "redis": lambda: _redis(redis),
    }
    while True:
        await asyncio.sleep(interval)
        for dependency, check in checks.items():
            if outage(dependency).down:
                await _within(dependency, check, limit, abandoned, "outage probe")


async def healthz(request: Request) -> JSONResponse:
    return JSONResponse({"status": "ok"})


def expected_migrations() -> int:
    return sum(
        1
        for entry in resources.files("models.migrations").iterdir()
        if entry.name[:4].isdigit() and entry.name.endswith(".py")
    )
