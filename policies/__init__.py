"""The composition root: settings turned into the policies the services take, here alone, once when a
process starts (the API's lifespan builds `ApiPolicies`, policies/api.py; the worker's middleware
`WorkerPolicies`, policies/worker.py). Every path that plans, fires or pumps gets the configured limits
(the recurrence budget above all), never a default built on the spot.

This module holds what both processes build; each process imports only its own module beside it, so the
worker never loads what only the API uses (the proof kinds and their media decoders)."""

from __future__ import annotations

from datetime import timedelta

from observability.outages import outage
from rules.recurrence import RecurrenceBudget
from services.accounts import AccountRules, PasswordHashing
from services.chain import ChainTiming
from services.exports import ExportRules
from services.kit import AttemptWindow, LoginBackoff
from services.timers import PumpSettings
from services.webhooks import (
    ApnsSender,
    DeliveryLimits,
    DeliveryTiming,
    FcmSender,
    NativePush,
    VapidIdentity,
)
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
    """How far ahead links are sent, how much work one recurrence call may do, and how many occurrences
    a late settlement records."""
    return ChainTiming(settings.link_horizon_seconds, recurrence_budget(settings), settings.catch_up_limit)


def pump_settings(settings: Settings) -> PumpSettings:
    return PumpSettings(
        link_horizon_seconds=settings.link_horizon_seconds,
        link_overdue_seconds=settings.link_overdue_seconds,
        max_outstanding_links=settings.max_outstanding_links,
        interval_seconds=settings.pump_interval_seconds,
    )


def horizon_day(settings: Settings) -> timedelta:
    """How long one day of the commitment horizon lasts (shorter only in tests and demos)."""
    return timedelta(seconds=settings.commitment_horizon_day_seconds)


def account_rules(settings: Settings, passwords: PasswordHashing) -> AccountRules:
    return AccountRules(
        passwords=passwords,
        min_password_length=settings.password_min_length,
        token_ttl_seconds=settings.token_ttl_seconds,
        public_url=settings.app_url,
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


def delivery_limits(settings: Settings) -> DeliveryLimits:
    return DeliveryLimits(
        per_process=settings.webhook_concurrency,
        per_user=settings.webhook_concurrency_per_user,
        per_host=settings.webhook_concurrency_per_host,
        allow_insecure=settings.webhook_allow_insecure,
        web_push=web_push_identity(settings),
        native=native_push(settings),
    )


def native_push(settings: Settings) -> NativePush:
    """The platforms set up: APNs with its key, team, key id and topic; FCM with its service account."""
    apns = None
    if settings.apns_key and settings.apns_key_id and settings.apns_team_id and settings.apns_topic:
        apns = ApnsSender.of(
            settings.apns_url,
            settings.apns_key,
            settings.apns_key_id,
            settings.apns_team_id,
            settings.apns_topic,
        )
    fcm = (
        FcmSender.of(settings.fcm_url, settings.fcm_service_account) if settings.fcm_service_account else None
    )
    return NativePush(apns=apns, fcm=fcm)


def web_push_identity(settings: Settings) -> VapidIdentity:
    return VapidIdentity.of(settings.resolved_secret_key, settings.vapid_private_key, settings.vapid_subject)


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
        link_base=settings.api_base_url,
    )
