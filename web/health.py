"""Liveness and readiness."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Coroutine
from importlib import resources
from typing import Any

import redis.asyncio as aioredis
from starlette.requests import Request
from starlette.responses import JSONResponse
from tortoise.backends.base.client import BaseDBAsyncClient

from web.state import resources_of


async def _database(database: BaseDBAsyncClient) -> str:
    rows = await database.execute_query_dict("SELECT COUNT(*) AS n FROM tortoise_migrations")
    return "ok" if int(rows[0]["n"]) >= expected_migrations() else "migrations pending"


async def _redis(redis: aioredis.Redis) -> str:
    await redis.ping()
    return "ok"


async def _within(
    check: Callable[[], Coroutine[Any, Any, str]], limit: float, abandoned: set[asyncio.Task[str]]
) -> str:
    """The check's verdict, or "timeout" once `limit` seconds pass; a paused server never answers, and
    waiting for a cancelled driver call to unwind can itself take as long as the driver's own timeout."""
    task = asyncio.ensure_future(check())
    done, _ = await asyncio.wait({task}, timeout=limit)
    if not done:
        task.cancel()
        abandoned.add(task)  # held until it ends by the driver's own timeout
        task.add_done_callback(abandoned.discard)
        return "error: timeout"
    try:
        return task.result()
    except Exception as exc:
        return f"error: {type(exc).__name__}"


def readyz(timeout: float) -> Callable[[Request], Awaitable[JSONResponse]]:
    abandoned: set[asyncio.Task[str]] = set()

    async def endpoint(request: Request) -> JSONResponse:
        """Ready when the database answers with every migration applied and Redis answers, within
        `timeout` (both checked at once)."""
        resources = resources_of(request)
        database, redis = await asyncio.gather(
            _within(lambda: _database(resources.database), timeout, abandoned),
            _within(lambda: _redis(resources.redis), timeout, abandoned),
        )
        checks = {"database": database, "redis": redis}
        ready = all(v == "ok" for v in checks.values())
        return JSONResponse({"ready": ready, "checks": checks}, status_code=200 if ready else 503)

    return endpoint


async def healthz(request: Request) -> JSONResponse:
    return JSONResponse({"status": "ok"})


def expected_migrations() -> int:
    return sum(
        1
        for entry in resources.files("models.migrations").iterdir()
        if entry.name[:4].isdigit() and entry.name.endswith(".py")
    )
