"""The Starlette application: /graphql (HTTP + websocket), /media, /healthz, /readyz, /metrics."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.middleware.cors import CORSMiddleware
from starlette.routing import Route, WebSocketRoute

from actors.broker import configure_broker
from realtime import notices
from runtime import close_database, open_database
from schema.schema import schema
from settings import Settings, get_settings
from web.graphql_view import ProofloopGraphQL
from web.health import healthz, readyz

DEV_ORIGINS = ["http://localhost:3000", "http://127.0.0.1:3000", "http://localhost:5173", "http://127.0.0.1:5173"]


def allowed_origins(settings: Settings) -> list[str]:
    if settings.cors_origins:
        return settings.cors_origins
    return DEV_ORIGINS if settings.env == "dev" else []


def create_app(settings: Settings | None = None) -> Starlette:
    settings = settings or get_settings()
    origins = allowed_origins(settings)
    graphql = ProofloopGraphQL(
        settings,
        schema=schema,
        graphql_ide="graphiql",
        multipart_uploads_enabled=True,
        allowed_origins=origins,
    )

    @asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        await open_database(settings)
        configure_broker(settings.resolved_redis_url)
        notices.configure(settings.resolved_redis_url)
        try:
            yield
        finally:
            await notices.close()
            await close_database()

    return Starlette(
        routes=[
            Route("/graphql", graphql, methods=["GET", "POST"]),
            WebSocketRoute("/graphql", graphql),
            Route("/healthz", healthz),
            Route("/readyz", readyz),
        ],
        middleware=[
            Middleware(
                CORSMiddleware,
                allow_origins=origins,
                allow_methods=["GET", "POST", "OPTIONS"],
                allow_headers=["Authorization", "Content-Type"],
            )
        ],
        lifespan=lifespan,
    )
