"""Users' webhooks: registration with a checked address and the event types chosen, the delivery outbox
written with each reminder or fanned out from the event feed, and the signed POSTs the workers send."""

from __future__ import annotations

from services.webhooks.fanout import fan_out_events
from services.webhooks.native_push import ApnsSender, FcmSender, NativePush
from services.webhooks.outbox import DELIVER_ACTOR, WEBHOOK_QUEUE, DeliveryTiming
from services.webhooks.pump import claim_due_deliveries
from services.webhooks.sender import DeliveryLimits, WebhookSender
from services.webhooks.web_push import BrowserKeys, VapidIdentity
from services.webhooks.webhooks import (
    FiredReminder,
    owned_webhooks_among,
    queue_reminder_webhooks,
    queue_webhooks_of,
)

__all__ = [
    "DELIVER_ACTOR",
    "WEBHOOK_QUEUE",
    "ApnsSender",
    "BrowserKeys",
    "DeliveryLimits",
    "DeliveryTiming",
    "FcmSender",
    "FiredReminder",
    "NativePush",
    "VapidIdentity",
    "WebhookSender",
    "claim_due_deliveries",
    "fan_out_events",
    "owned_webhooks_among",
    "queue_reminder_webhooks",
    "queue_webhooks_of",
]
