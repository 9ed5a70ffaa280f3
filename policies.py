"""The composition root: settings turned into the policies the services take, here alone, once when a
process starts (the API's lifespan builds `ApiPolicies`, the worker's middleware `WorkerPolicies`). Every
path that plans, fires or pumps gets the configured limits (the recurrence budget above all), never a
default built on the spot."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta

from observability.outages import outage
from rules.recurrence import RecurrenceBudget
from services.accounts import AccountRules, PasswordHashing
from services.chain import ChainTiming
from services.exports import ExportRules
from services.kit import AttemptWindow, EventIds, LoginBackoff, event_ids
from services.proofs import DecodeGate, IntegrationPolicy, MediaPolicy
from services.timers import PumpSettings
from services.webhooks import DeliveryLimits, DeliveryTiming
from settings import Settings
from storage import ArchiveStore, BlobStore, open_archive_store, open_blob_store

# A mail-request window is an hour: PROOFLOOP_MAIL_REQUESTS_PER_HOUR says how many fit in one.
_MAIL_WINDOW_SECONDS = 3600


def recurrence_budget(settings: Settings) -> RecurrenceBudget:
    """How much work one recurrence call may do (steps, with a clock backstop)."""
    return RecurrenceBudget(
        max_steps=settings.recurrence_max_steps,
        max_seconds=settings.recurrence_max_seconds,
        max_per_period=settings.recurrence_max_per_period,
        max_skipped_periods=settings.recurrence_max_skipped_periods,
    )


def chain_timing(settings: Settings) -> ChainTiming:
    """How far ahead links are sent, and how much work one recurrence call may do."""
    return ChainTiming(settings.link_horizon_seconds, recurrence_budget(settings))


def pump_settings(settings: Settings) -> PumpSettings:
    return PumpSettings(
        link_horizon_seconds=settings.link_horizon_seconds,
        link_overdue_seconds=settings.link_overdue_seconds,
        max_outstanding_links=settings.max_outstanding_links,
    )


def horizon_day(settings: Settings) -> timedelta:
    """How long one day of the commitment horizon lasts (shorter only in tests and demos)."""
    return timedelta(seconds=settings.commitment_horizon_day_seconds)


def account_rules(settings: Settings, passwords: PasswordHashing) -> AccountRules:
    return AccountRules(
        passwords=passwords,
        min_password_length=settings.password_min_length,
        token_ttl_seconds=settings.token_ttl_seconds,
        public_url=settings.public_url,
        login_backoff=LoginBackoff(
            attempts=settings.login_attempts,
            base_seconds=settings.login_backoff_seconds,
            max_seconds=settings.login_backoff_max_seconds,
            window_seconds=settings.login_window_seconds,
        ),
        per_address=AttemptWindow(
            "auth-address", settings.auth_address_attempts, settings.auth_address_window_seconds
        ),
        mail_requests=AttemptWindow("mail", settings.mail_requests_per_hour, _MAIL_WINDOW_SECONDS),
    )


def blob_store(settings: Settings) -> BlobStore:
    """The process's media store (PROOFLOOP_MEDIA_STORE_URL); an S3 store's answers end its outage."""
    return open_blob_store(
        settings.media_store_url,
        settings.media_dir,
        timeout=settings.media_store_timeout_seconds,
        on_answer=outage("media store").answered,
    )


def archive_store(settings: Settings) -> ArchiveStore:
    """Where data exports are kept: the media store's bucket when it is S3, else the data dir."""
    return open_archive_store(
        settings.media_store_url,
        settings.exports_dir,
        timeout=settings.media_store_timeout_seconds,
        on_answer=outage("media store").answered,
    )


def media_policy(settings: Settings, gate: DecodeGate, store: BlobStore) -> MediaPolicy:
    return MediaPolicy(
        store=store,
        gate=gate,
        max_image_pixels=settings.max_image_pixels,
        max_decode_bytes=settings.max_decode_bytes,
        max_video_frames=settings.max_video_frames,
        max_video_pixels=settings.max_video_pixels,
        quota_bytes=settings.media_quota_bytes,
    )


def integration_policy(settings: Settings) -> IntegrationPolicy:
    return IntegrationPolicy(
        max_body_bytes=settings.integration_max_body_bytes,
        events_per_day=settings.integration_events_per_day,
        replay_seconds=settings.integration_replay_seconds,
        per_address=AttemptWindow("integration-address", settings.integration_requests_per_minute, 60),
    )


def delivery_limits(settings: Settings) -> DeliveryLimits:
    return DeliveryLimits(
        per_process=settings.webhook_concurrency,
        per_user=settings.webhook_concurrency_per_user,
        per_host=settings.webhook_concurrency_per_host,
        allow_insecure=settings.webhook_allow_insecure,
    )


def delivery_timing(settings: Settings) -> DeliveryTiming:
    return DeliveryTiming(
        attempt_seconds=settings.webhook_timeout_seconds,
        max_attempts=settings.webhook_max_attempts,
        backoff_seconds=settings.webhook_backoff_seconds,
        backoff_max_seconds=settings.webhook_backoff_max_seconds,
        link_horizon_seconds=settings.link_horizon_seconds,
    )


def export_rules(settings: Settings) -> ExportRules:
    return ExportRules(
        per_day=settings.exports_per_day,
        link_seconds=settings.export_link_seconds,
        link_base=settings.api_url or settings.public_url,
    )


@dataclass(frozen=True)
class ApiPolicies:
    """What the API's resolvers hand the services, built once by the lifespan (app.py)."""

    chain: ChainTiming
    horizon_day: timedelta
    accounts: AccountRules
    media: MediaPolicy
    webhook_tries: AttemptWindow  # test pings and redeliveries, per user
    exports: ExportRules
    integrations: IntegrationPolicy


def api_policies(
    settings: Settings, *, passwords: PasswordHashing, decode_gate: DecodeGate, media_store: BlobStore
) -> ApiPolicies:
    return ApiPolicies(
        chain=chain_timing(settings),
        horizon_day=horizon_day(settings),
        accounts=account_rules(settings, passwords),
        media=media_policy(settings, decode_gate, media_store),
        webhook_tries=AttemptWindow("webhook-tries", settings.webhook_tries_per_hour, 3600),
        exports=export_rules(settings),
        integrations=integration_policy(settings),
    )


@dataclass(frozen=True)
class WorkerPolicies:
    """What the worker's actors and pump hand the services, built once per worker process."""

    chain: ChainTiming
    pump: PumpSettings
    webhook_limits: DeliveryLimits
    webhook_timing: DeliveryTiming
    event_ids: EventIds  # the public event ids webhook payloads carry
    exports: ExportRules
    media_store: BlobStore  # what exports read and account deletion removes
    archives: ArchiveStore  # where exports are kept and swept


def worker_policies(settings: Settings, media_store: BlobStore, archives: ArchiveStore) -> WorkerPolicies:
    return WorkerPolicies(
        chain=chain_timing(settings),
        pump=pump_settings(settings),
        webhook_limits=delivery_limits(settings),
        webhook_timing=delivery_timing(settings),
        event_ids=event_ids(settings.resolved_secret_key),
        exports=export_rules(settings),
        media_store=media_store,
        archives=archives,
    )
