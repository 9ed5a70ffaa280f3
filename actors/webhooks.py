"""webhooks.deliver: one attempt at POSTing a signed reminder; the service sends the next attempt
itself (its count travels in the message), so giving up is a decision it makes and counts."""

from __future__ import annotations

import dramatiq

from services.webhooks import DELIVER_ACTOR, WEBHOOK_QUEUE, WebhookPolicy, deliver_webhook
from settings import Settings, get_settings


def webhook_policy(settings: Settings) -> WebhookPolicy:
    return WebhookPolicy(
        allow_insecure=settings.webhook_allow_insecure,
        max_attempts=settings.webhook_max_attempts,
        backoff_seconds=settings.webhook_backoff_seconds,
        timeout_seconds=settings.webhook_timeout_seconds,
    )


@dramatiq.actor(actor_name=DELIVER_ACTOR, queue_name=WEBHOOK_QUEUE, max_retries=0)
async def deliver(hook_id: str, body: str, delivery_id: str, attempt: int) -> None:
    await deliver_webhook(hook_id, body, delivery_id, attempt, webhook_policy(get_settings()))
