"""The worker process's policies, built once per process by its middleware (actors/worker_policies.py)."""

from __future__ import annotations

from dataclasses import dataclass

from policies import chain_timing, delivery_limits, delivery_timing, export_rules, pump_settings
from services.chain import ChainTiming
from services.exports import ExportRules
from services.kit import EventIds, event_ids
from services.mail import MailRoute
from services.timers import PumpSettings
from services.webhooks import DeliveryLimits, DeliveryTiming
from settings import Settings
from storage import ArchiveStore, BlobStore


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
    mail: MailRoute  # where the outbox's mail goes


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
        mail=MailRoute(settings.smtp_url, settings.mail_from, settings.mail_dir),
    )
