"""The Starlette application: /graphql (HTTP + websocket), /media, /healthz, /readyz, /metrics."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import AbstractAsyncContextManager, asynccontextmanager, nullcontext

from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.middleware.cors import CORSMiddleware
from starlette.routing import Route, WebSocketRoute
from strawberry.subscriptions import (
    GRAPHQL_SSE_PROTOCOL,
    GRAPHQL_TRANSPORT_WS_PROTOCOL,
    GRAPHQL_WS_PROTOCOL,
    MULTIPART_SUBSCRIPTION_PROTOCOL,
)

from actors.broker import configure_broker
from observability.gc_pauses import timed_collections
from observability.statements import StatementCount, count_statements
from policies import archive_store, blob_store
from policies.api import api_policies
from realtime.hub import Hub
from realtime.redis_client import close_redis, open_redis
from realtime.redis_options import RedisTimeouts
from runtime import close_database, configure_logging, open_database
from schema.parse_cache import ValidDocuments
from schema.schema import schema
from services.accounts import PasswordHashing, accounts
from services.feed import feeds
from services.kit import NameLookups
from services.media import sweep_orphans_forever
from services.partners import access
from services.proofs import DecodeGate
from settings import Settings, get_settings
from storage import BlobStore
from web.exports import exports_endpoint
from web.graphiql import graphiql_assets
from web.graphql_view import ProofloopGraphQL
from web.health import healthz, probe_outages, readyz
from web.heap import freeze_start_up, frozen_subscriptions
from web.integrations import integrations_endpoint
from web.media import media_endpoint
from web.metrics import metrics
from web.origins import allowed_headers, allowed_origins
from web.pages import mail_link_pages
from web.persisted_documents import TrustedDocuments
from web.slow_body import SlowBodyGuard
from web.state import ApiResources, ApiState
from web.uploads import UploadLimits


def start_media_sweep(settings: Settings, store: BlobStore) -> asyncio.Task[None] | None:
    if settings.media_sweep_seconds <= 0:
        return None
    return asyncio.create_task(
        sweep_orphans_forever(store, settings.media_sweep_seconds, settings.media_orphan_age_seconds)
    )


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
        origins=origins,
        trusted_documents=TrustedDocuments.from_settings(settings),
        subscription_protocols=(
            GRAPHQL_TRANSPORT_WS_PROTOCOL,
            GRAPHQL_WS_PROTOCOL,
            GRAPHQL_SSE_PROTOCOL,
            MULTIPART_SUBSCRIPTION_PROTOCOL,
        ),
        # one socket never needs more than its user's quota; past it, refused before any parsing
        max_subscriptions_per_connection=settings.max_subscriptions_per_user,
    )

    @asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[ApiState]:
        """Opens every resource of the API process, in one place; requests read them from their state."""
        database = await open_database(settings)
        configure_broker(settings.resolved_redis_url, timeouts=RedisTimeouts.of(settings))
        redis = open_redis(settings.resolved_redis_url, RedisTimeouts.of(settings))
        hub = Hub(
            settings.resolved_redis_url,
            read_between=feeds.events_between,
            watchers_of=access.watchers_of,
            watched_by=access.watched_by,
            latest_position=feeds.latest_position,
            token_expiry=accounts.token_expiry,
            notices=settings.live_notices,
            linger_seconds=settings.live_channel_linger_seconds,
            refresh_seconds=settings.live_watch_refresh_seconds,
            read_batch=feeds.READ_BATCH,
        )
        await hub.start()
        passwords = PasswordHashing(
            settings.password_hash_threads,
            settings.password_hash_queue,
            time_cost=settings.password_hash_time_cost,
            memory_kib=settings.password_hash_memory_kib,
        )
        # one per process: every request's media decodes share it
        decode_gate = DecodeGate(settings.media_decode_concurrency, settings.media_decode_queue)
        media_store = blob_store(settings)
        resources = ApiResources(
            settings=settings,
            database=database,
            redis=redis,
            hub=hub,
            passwords=passwords,
            decode_gate=decode_gate,
            documents=ValidDocuments(settings.document_cache_bytes),
            name_lookups=NameLookups(),
            media_store=media_store,
            archives=archive_store(settings),
            policies=api_policies(
                settings, passwords=passwords, decode_gate=decode_gate, media_store=media_store
            ),
        )
        sweep = start_media_sweep(settings, media_store)
        probe = asyncio.create_task(
            probe_outages(database, redis, settings.outage_probe_seconds, settings.ready_timeout_seconds)
        )
        heap: AbstractAsyncContextManager[None] = nullcontext()
        if settings.gc_freeze:
            freeze_start_up()  # full collections skip start-up's objects from now on
        if settings.gc_freeze and settings.gc_freeze_after_subscriptions > 0:
            heap = frozen_subscriptions(
                lambda: hub.registered_total, settings.gc_freeze_after_subscriptions, settings.gc_thaw_seconds
            )
        try:
            with timed_collections():  # after start-up's collection: what the loop meets while serving
                async with heap:
                    yield {"resources": resources}
        finally:
            probe.cancel()
            if sweep is not None:
                sweep.cancel()
            await hub.stop()
            await close_redis()
            await close_database()
            resources.passwords.close()
            resources.documents.close()
            resources.name_lookups.close()

    return Starlette(
        routes=[
            Route("/graphql", graphql, methods=["GET", "POST"]),
            WebSocketRoute("/graphql", graphql),
            Route("/healthz", healthz),
            Route("/readyz", readyz(settings.ready_timeout_seconds)),
            Route("/metrics", metrics),
            graphiql_assets(),
            Route("/media/{verification_id}", media_endpoint(settings)),
            Route("/exports/{export_id}", exports_endpoint(settings)),
            Route("/integrations/{key}/events", integrations_endpoint(settings), methods=["POST"]),
            *mail_link_pages(),
        ],
        middleware=[
            Middleware(
                SlowBodyGuard, timeout=settings.body_timeout_seconds, min_rate=settings.body_min_rate_bytes
            ),
            Middleware(
                CORSMiddleware,
                allow_origins=sorted(origins.exact),
                allow_origin_regex=origins.pattern,
                allow_methods=["GET", "POST", "OPTIONS"],
                allow_headers=allowed_headers(settings),
                # a browser's script may read whether an answer was a retry's (web/idempotency.py)
                expose_headers=["Idempotent-Replayed", "Retry-After"],
            ),
            # inside CORS, so a browser can read the 401/413 it answers
            Middleware(UploadLimits, settings=settings),
            *([Middleware(StatementCount)] if settings.count_statements else []),
        ],
        lifespan=lifespan,
    )
