"""The Starlette application: /graphql (HTTP + websocket), /media, /healthz, /readyz, /metrics."""

from __future__ import annotations

import gc
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.middleware.cors import CORSMiddleware
from starlette.routing import Route, WebSocketRoute

from actors.broker import configure_broker
from observability.statements import StatementCount, count_statements
from realtime import notices
from realtime.hub import Hub, start_hub, stop_hub
from runtime import close_database, configure_logging, open_database
from schema.schema import schema
from services import feeds
from settings import Settings, get_settings
from web.graphiql import graphiql_assets
from web.graphql_view import ProofloopGraphQL
from web.health import healthz, readyz
from web.media import media_endpoint
from web.metrics import metrics
from web.uploads import UploadLimits

DEV_ORIGINS = [
    "http://localhost:3000",
    "http://127.0.0.1:3000",
    "http://localhost:5173",
    "http://127.0.0.1:5173",
]


def allowed_origins(settings: Settings) -> list[str]:
    if settings.cors_origins:
        return settings.cors_origins
    return DEV_ORIGINS if settings.env == "dev" else []


def create_app(settings: Settings | None = None) -> Starlette:
    settings = settings or get_settings()
    configure_logging(settings)  # each uvicorn worker process builds its app here
    if settings.count_statements:
        count_statements()
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
        await start_hub(
            Hub(
                settings.resolved_redis_url,
                read_after=feeds.events_after,
                watchers_of=feeds.watchers_of,
                latest_position=feeds.latest_position,
            )
        )
        if settings.gc_freeze:
            # start-up's objects (modules, schema, pools) live forever: full collections skip them
            gc.collect()
            gc.freeze()
        try:
            yield
        finally:
            await stop_hub()
            await notices.close()
            await close_database()

    return Starlette(
        routes=[
            Route("/graphql", graphql, methods=["GET", "POST"]),
            WebSocketRoute("/graphql", graphql),
            Route("/healthz", healthz),
            Route("/readyz", readyz),
            Route("/metrics", metrics),
            graphiql_assets(),
            Route("/media/{verification_id}", media_endpoint(settings)),
        ],
        middleware=[
            Middleware(
                CORSMiddleware,
                allow_origins=origins,
                allow_methods=["GET", "POST", "OPTIONS"],
                allow_headers=["Authorization", "Content-Type"],
            ),
            # inside CORS, so a browser can read the 401/413 it answers
            Middleware(UploadLimits, settings=settings),
            *([Middleware(StatementCount)] if settings.count_statements else []),
        ],
        lifespan=lifespan,
    )
