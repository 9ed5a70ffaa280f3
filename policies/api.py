"""The API process's policies, built once by its lifespan (app.py)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta

from policies import (
    account_rules,
    chain_timing,
    export_rules,
    horizon_day,
    native_push,
    web_push_identity,
)
from services.accounts import AccountRules, PasswordHashing
from services.chain import ChainTiming
from services.exports import ExportRules
from services.kit import AttemptWindow
from services.proofs import DecodeGate, IntegrationPolicy, MediaPolicy
from services.webhooks import NativePush, VapidIdentity
from settings import Settings
from storage import BlobStore


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


@dataclass(frozen=True)
class ApiPolicies:
    """What the API's resolvers hand the services, built once by the lifespan (app.py)."""

    chain: ChainTiming
    horizon_day: timedelta
    accounts: AccountRules
    media: MediaPolicy
    webhook_tries: AttemptWindow  # test pings and redeliveries, per user
    web_push: VapidIdentity  # the key browsers subscribe with (its public half)
    native_push: NativePush  # which phone platforms devices may be registered for
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
        web_push=web_push_identity(settings),
        native_push=native_push(settings),
        exports=export_rules(settings),
        integrations=integration_policy(settings),
    )
