"""The worker's webhook sender: built on the event loop before the first message, its attempts stopped
before the database closes (added after WorkerDatabase)."""

from __future__ import annotations

from typing import Any

import dramatiq
from dramatiq.asyncio import get_event_loop_thread
from dramatiq.middleware import Middleware

from services.webhooks import DeliveryLimits, DeliveryTiming, WebhookSender
from settings import Settings


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


class WebhookSending(Middleware):
    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.sender: WebhookSender | None = None

    def before_worker_boot(self, broker: Any, worker: Any) -> None:
        self.sender = WebhookSender(delivery_limits(self.settings), delivery_timing(self.settings))

    def after_worker_shutdown(self, broker: Any, worker: Any) -> None:
        loop_thread = get_event_loop_thread()
        if loop_thread is not None and self.sender is not None:
            loop_thread.run_coroutine(self.sender.close())


def webhook_sender() -> WebhookSender:
    """This worker process's sender (its WebhookSending middleware's)."""
    for middleware in dramatiq.get_broker().middleware:
        if isinstance(middleware, WebhookSending) and middleware.sender is not None:
            return middleware.sender
    raise RuntimeError("the worker has no WebhookSending middleware")
