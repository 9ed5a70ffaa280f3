"""Liveness and readiness."""

from __future__ import annotations

from importlib import resources

from starlette.requests import Request
from starlette.responses import JSONResponse

from realtime import notices
from services.db import connection


async def healthz(request: Request) -> JSONResponse:
    return JSONResponse({"status": "ok"})


async def readyz(request: Request) -> JSONResponse:
    """Ready when the database answers with every migration applied and Redis answers."""
    checks: dict[str, str] = {}
    try:
        rows = await connection().execute_query_dict("SELECT COUNT(*) AS n FROM tortoise_migrations")
        checks["database"] = "ok" if int(rows[0]["n"]) >= expected_migrations() else "migrations pending"
    except Exception as exc:
        checks["database"] = f"error: {type(exc).__name__}"
    try:
        await notices.client().ping()
        checks["redis"] = "ok"
    except Exception as exc:
        checks["redis"] = f"error: {type(exc).__name__}"
    ready = all(v == "ok" for v in checks.values())
    return JSONResponse({"ready": ready, "checks": checks}, status_code=200 if ready else 503)


def expected_migrations() -> int:
    return sum(
        1
        for entry in resources.files("models.migrations").iterdir()
        if entry.name[:4].isdigit() and entry.name.endswith(".py")
    )
